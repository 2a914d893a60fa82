package org.efaah.ud;

import static org.junit.jupiter.api.Assertions.assertDoesNotThrow;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.ByteBuffer;
import org.efaah.cache.AddressHandle;
import org.efaah.cache.AddressHandleCache;
import org.efaah.cache.LeakDetection;
import org.efaah.verbs.AddressHandleAttributes;
import org.efaah.verbs.Device;
import org.efaah.verbs.Errno;
import org.efaah.verbs.ProtectionDomain;
import org.efaah.verbs.VerbsException;
import org.efaah.verbs.mock.MockConfig;
import org.efaah.verbs.mock.MockVerbsProvider;
import org.junit.jupiter.api.Test;

/**
 * Issue 28 cases 2 and 10, of the kinds "every close waits for a close already running" and "a
 * failed close can be retried".
 */
class UdEndpointCloseTest {

    private static final ByteBuffer PAYLOAD = ByteBuffer.allocate(64);

    @Test
    void aSecondCloseWaitsForTheFirstSoTheCacheClosedNextSeesNoLeakAndNoAhGoesUnderASend() throws Exception {
        MockVerbsProvider mock = new MockVerbsProvider(MockConfig.builder().deviceCount(2).build());
        try (Device d0 = Device.open(mock, "efa_0");
             Device d1 = Device.open(mock, "efa_1");
             ProtectionDomain pd0 = d0.allocatePd();
             ProtectionDomain pd1 = d1.allocatePd()) {
            AddressHandleCache cache = AddressHandleCache.builder().leakDetection(LeakDetection.PARANOID).build();
            UdEndpoint receiver = UdEndpoint.open(pd1, cache, UdEndpoint.Options.defaults());
            UdEndpoint sender = UdEndpoint.open(pd0, cache, UdEndpoint.Options.defaults());
            try (AddressHandle ah = cache.acquire(pd0, AddressHandleAttributes.builder()
                    .dgid(receiver.address().gid()).build())) {
                mock.holdSendCompletions(true); // the first close drains for its whole second
                sender.send(ah, receiver.address(), PAYLOAD.duplicate());
            }
            Thread first = new Thread(sender::close, "first-close");
            first.start();
            while (!inClose(first) && first.isAlive()) {
                Thread.onSpinWait();
            }
            sender.close(); // returns once the first close has freed everything
            receiver.close();
            cache.close();
            assertEquals(0, cache.stats().leaksReported(), "every handle was closed");
            assertEquals(0, mock.counters().liveAhs());
            first.join(5000);
        }
    }

    /** Whether {@code t} is inside {@link UdEndpoint#close()} now. */
    private static boolean inClose(Thread t) {
        for (StackTraceElement e : t.getStackTrace()) {
            if (e.getClassName().equals(UdEndpoint.class.getName()) && e.getMethodName().equals("close")) {
                return true;
            }
        }
        return false;
    }

    @Test
    void aCloseWhoseDrainFailsStillFreesEverythingAndSaysWhy() {
        FaultyDatapath faulty = new FaultyDatapath(new MockVerbsProvider(MockConfig.builder().deviceCount(2).build()));
        try (Device d0 = Device.open(faulty, "efa_0");
             Device d1 = Device.open(faulty, "efa_1");
             ProtectionDomain pd1 = d1.allocatePd();
             AddressHandleCache cache = AddressHandleCache.builder().leakDetection(LeakDetection.PARANOID).build()) {
            ProtectionDomain pd0 = d0.allocatePd();
            try (UdEndpoint receiver = UdEndpoint.open(pd1, cache, UdEndpoint.Options.defaults())) {
                UdEndpoint sender = UdEndpoint.open(pd0, cache, UdEndpoint.Options.defaults());
                try (AddressHandle ah = cache.acquire(pd0, AddressHandleAttributes.builder()
                        .dgid(receiver.address().gid()).build())) {
                    faulty.mock.holdSendCompletions(true);
                    sender.send(ah, receiver.address(), PAYLOAD.duplicate());
                }
                faulty.failNextPoll = true;
                VerbsException e = assertThrows(VerbsException.class, sender::close);
                assertTrue(e.getMessage().contains("ibv_poll_cq"), e.getMessage());
                assertDoesNotThrow(sender::close);
                cache.invalidateAll();
                assertDoesNotThrow(pd0::close, "the QP, CQs and MRs of the endpoint are gone");
            }
        }
    }

    @Test
    void aCloseWhoseQpDestroyFailedIsRetriedByTheNext() {
        FaultyDatapath faulty = new FaultyDatapath(new MockVerbsProvider(MockConfig.builder().deviceCount(1).build()));
        try (Device d0 = Device.open(faulty, "efa_0");
             AddressHandleCache cache = AddressHandleCache.builder().leakDetection(LeakDetection.PARANOID).build()) {
            ProtectionDomain pd0 = d0.allocatePd();
            UdEndpoint endpoint = UdEndpoint.open(pd0, cache, UdEndpoint.Options.defaults());
            faulty.failNextQpDestroy = true;
            VerbsException e = assertThrows(VerbsException.class, endpoint::close);
            assertSame(Errno.EBUSY, e.errno());
            assertThrows(VerbsException.class, pd0::close, "the QP is still there");
            endpoint.close();
            assertDoesNotThrow(pd0::close, "the retry freed the QP");
            assertTrue(endpoint.closed());
        }
    }
}
