package org.efaah.cache;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.time.Duration;
import java.time.temporal.ChronoUnit;
import org.junit.jupiter.api.Test;

/** Issue 17 case 9: an idle time that does not fit in nanoseconds is refused up front, naming idleTime. */
class RetentionPolicyRangeTest {

    @Test
    void foreverIsRefusedNamingIdleTime() {
        IllegalArgumentException e = assertThrows(IllegalArgumentException.class,
                () -> RetentionPolicy.idle(ChronoUnit.FOREVER.getDuration(), 8));
        assertTrue(e.getMessage().startsWith("idleTime: ") && e.getMessage().contains("is out of range; valid 0.."),
                e.getMessage());
    }

    @Test
    void oneNanosecondBeyondTheLongIsRefused() {
        Duration longest = Duration.ofNanos(Long.MAX_VALUE);
        assertThrows(IllegalArgumentException.class, () -> RetentionPolicy.idle(longest.plusNanos(1), 8));
        assertThrows(IllegalArgumentException.class, () -> RetentionPolicy.idle(Duration.ofMillis(Long.MAX_VALUE), 8));
    }

    @Test
    void theLongestIdleTimeBuildsACache() {
        RetentionPolicy p = RetentionPolicy.idle(Duration.ofNanos(Long.MAX_VALUE), 8);
        try (AddressHandleCache cache = AddressHandleCache.builder().retention(p).build()) {
            assertEquals(p, cache.inspection().retention());
        }
    }
}
