package org.efaah.cache;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;

/** Issue 17 case 3: invalidate(pd, gid) takes the GID as text, as acquire and forGid do. */
@ExtendWith(CacheInvariants.class)
class InvalidateByTextTest {

    @Test
    void aGidGivenAsTextInvalidatesItsAh() {
        try (MockFixture f = new MockFixture()) {
            try (AddressHandle h = f.cache.acquire(f.pd, MockFixture.peer(1))) {
                assertEquals(1, f.cache.invalidate(f.pd, "fe80::1"));
                assertEquals(0, f.cache.invalidate(f.pd, "fe80::2"));
            }
            f.cache.acquire(f.pd, MockFixture.peer(1)).close();
            assertEquals(2, f.cache.stats().hardwareCreates(), "a fresh AH after the invalidation");
        }
    }

    @Test
    void badTextIsTheGidParsersError() {
        try (MockFixture f = new MockFixture()) {
            IllegalArgumentException e = assertThrows(IllegalArgumentException.class,
                    () -> f.cache.invalidate(f.pd, "not-a-gid"));
            assertEquals(true, e.getMessage().contains("not-a-gid"), e.getMessage());
        }
    }
}
