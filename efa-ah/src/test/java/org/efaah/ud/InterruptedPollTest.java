package org.efaah.ud;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.ByteBuffer;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.locks.LockSupport;
import org.efaah.cache.AddressHandle;
import org.efaah.cache.AddressHandleCache;
import org.efaah.cache.LeakDetection;
import org.efaah.verbs.AddressHandleAttributes;
import org.efaah.verbs.Device;
import org.efaah.verbs.ForwardingVerbsProvider;
import org.efaah.verbs.InterruptedOperationException;
import org.efaah.verbs.ProtectionDomain;
import org.efaah.verbs.mock.MockConfig;
import org.efaah.verbs.mock.MockVerbsProvider;
import org.junit.jupiter.api.Test;

/**
 * Attack round, items 2 and 3: on EFA the endpoint names a sender at poll through
 * AddressHandleCache.acquireByAhn, which waits for the entry's lock while another thread destroys
 * that AH. A poll from an interrupted thread at that moment must not lose the datagram.
 */
@org.junit.jupiter.api.Tag("timing") // scripts/test runs it under load: see TimingRounds
class InterruptedPollTest {

    /** The mock, whose destroy of one chosen AH waits until released. */
    static final class SlowDestroy extends ForwardingVerbsProvider {
        volatile long slow;
        final CountDownLatch destroying = new CountDownLatch(1);
        final CountDownLatch release = new CountDownLatch(1);

        SlowDestroy(MockVerbsProvider mock) {
            super(mock);
        }

        @Override
        public void destroyAh(long ah) {
            if (ah == slow) {
                destroying.countDown();
                try {
                    release.await(10, TimeUnit.SECONDS);
                } catch (InterruptedException e) {
                    Thread.currentThread().interrupt();
                }
            }
            super.destroyAh(ah);
        }
    }

    @Test
    void aPollInterruptedWhileItsSendersAhIsDestroyedKeepsTheDatagram() throws Exception {
        SlowDestroy provider = new SlowDestroy(new MockVerbsProvider(MockConfig.builder().deviceCount(2).build()));
        AtomicInteger received = new AtomicInteger();
        try (AddressHandleCache cache = AddressHandleCache.builder().leakDetection(LeakDetection.DISABLED).build();
             Device dR = Device.open(provider, "efa_0");
             ProtectionDomain pdR = dR.allocatePd();
             Device dA = Device.open(provider, "efa_1");
             ProtectionDomain pdA = dA.allocatePd();
             UdEndpoint receiver = UdEndpoint.open(pdR, cache, UdEndpoint.Options.defaults());
             UdEndpoint a = UdEndpoint.open(pdA, cache, UdEndpoint.Options.defaults())) {
            AddressHandle toA = cache.acquire(pdR, AddressHandleAttributes.builder().dgid(a.address().gid()).build());
            a.send(receiver.address(), ByteBuffer.allocate(8)); // arrives naming toA's AHN
            provider.slow = toA.nativeHandle();
            Thread closer = new Thread(toA::close, "last-close"); // the last handle: the AH is destroyed
            closer.start();
            assertTrue(provider.destroying.await(10, TimeUnit.SECONDS));
            Thread releaser = new Thread(() -> {
                LockSupport.parkNanos(TimeUnit.MILLISECONDS.toNanos(200)); // while the poll waits for the destroy
                provider.release.countDown();
            }, "releaser");
            releaser.start();
            InterruptedOperationException thrown = null;
            boolean stillInterrupted;
            Thread.currentThread().interrupt();
            try {
                received.addAndGet(receiver.poll(v -> assertEquals(SourceOrigin.UNKNOWN, v.origin(),
                        "its AH was destroyed after the datagram's arrival; no other took its AHN"), 1));
            } catch (InterruptedOperationException e) {
                thrown = e;
            } finally {
                stillInterrupted = Thread.interrupted();
            }
            releaser.join(10_000);
            closer.join(10_000);
            assertTrue(stillInterrupted, "the interrupt status is kept for the caller's next wait");
            if (received.get() == 0) {
                received.addAndGet(receiver.receive(v -> { }, 1, 2, TimeUnit.SECONDS));
            }
            assertEquals(1, received.get(), "the datagram sent once is received once; the interrupted poll threw "
                    + thrown);
        }
    }
}
