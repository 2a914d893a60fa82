package org.efaah.cache;

import static org.efaah.cache.MockFixture.peer;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.lang.management.ManagementFactory;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import javax.management.MBeanServer;
import javax.management.MBeanServerDelegate;
import javax.management.MBeanServerNotification;
import javax.management.NotificationListener;
import javax.management.ObjectName;
import org.efaah.fixture.LogCapture;
import org.efaah.verbs.DeviceEvent;
import org.efaah.verbs.ProtectionDomain;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;

/**
 * Issue 22 case 5 and issue 18's MXBean cases, one kind: every registration a cache makes (a
 * device listener, an MXBean) against a concurrent close, and a close that unregisters only what
 * the cache itself registered.
 */
@ExtendWith(CacheInvariants.class)
class RegistrationRaceTest {
    private static final MBeanServer SERVER = ManagementFactory.getPlatformMBeanServer();

    /**
     * Case 5: the first acquire on a new PD passes the open check, then stalls (here on another
     * PD being deallocated, whose table it tidies); close runs and removes every listener; the
     * acquire then registered its listener, and the closed cache kept hearing the device.
     */
    @Test
    void closeRacingTheFirstAcquireOnANewPdLeavesTheCacheListeningToNothing() throws Exception {
        ExecutorService pool = Executors.newFixedThreadPool(2);
        try (LogCapture log = LogCapture.of(AddressHandleCache.class)) {
            FaultyFixture f = new FaultyFixture();
            ProtectionDomain old = f.device.allocatePd();
            f.cache.acquire(old, peer(1)).close(); // old's table is now empty: the next new PD tidies it
            ProtectionDomain fresh = f.device.allocatePd();
            CountDownLatch deallocating = new CountDownLatch(1);
            CountDownLatch letGo = new CountDownLatch(1);
            f.provider.onDeallocatePd = h -> {
                deallocating.countDown();
                await(letGo);
            };
            Future<?> closingOld = pool.submit(old::close);
            assertTrue(deallocating.await(10, TimeUnit.SECONDS));
            Thread[] acquirer = {null};
            Future<?> acquire = pool.submit(() -> {
                acquirer[0] = Thread.currentThread();
                return f.cache.acquire(fresh, peer(2));
            });
            long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(10);
            while ((acquirer[0] == null || acquirer[0].getState() != Thread.State.WAITING) && System.nanoTime() < deadline) {
                Thread.onSpinWait();
            }
            assertEquals(Thread.State.WAITING, acquirer[0].getState(), "the acquire waits on the old PD's guard");
            f.cache.close();
            letGo.countDown();
            closingOld.get(10, TimeUnit.SECONDS);
            ExecutionException refused = assertThrows(ExecutionException.class, () -> acquire.get(10, TimeUnit.SECONDS));
            assertTrue(refused.getCause() instanceof IllegalStateException, refused.getCause().toString());

            CountDownLatch heard = new CountDownLatch(1);
            f.device.addEventListener(event -> heard.countDown()); // after any of the cache's
            f.provider.mock.raiseEvent(f.device.name(), DeviceEvent.Kind.PORT_ACTIVE, 1);
            assertTrue(heard.await(10, TimeUnit.SECONDS));
            assertEquals(0, log.count(ch.qos.logback.classic.Level.INFO, "PORT_ACTIVE"),
                    "the closed cache heard the device: " + log.messages(ch.qos.logback.classic.Level.INFO));
            fresh.close();
            f.pd.close();
            f.device.close();
        } finally {
            pool.shutdownNow();
        }
    }

    /**
     * The kind of case 5 against a device's close: the first acquire on a PD registers the
     * cache's listeners while that PD's device is being closed, after the close took its lock and
     * before it called its listeners. The close then calls the cache's; the acquire must neither
     * wait for the close while holding what the cache's listener needs (a deadlock), nor succeed.
     */
    @Test
    void theFirstAcquireOnAPdWhoseDeviceIsClosingNeitherDeadlocksNorSucceeds() throws Exception {
        ExecutorService pool = Executors.newFixedThreadPool(2);
        try (LogCapture log = LogCapture.of(AddressHandleCache.class, org.efaah.verbs.Device.class)) {
            FaultyFixture f = new FaultyFixture();
            ProtectionDomain fresh = f.device.allocatePd();
            CountDownLatch closing = new CountDownLatch(1);
            CountDownLatch letGo = new CountDownLatch(1);
            // The first close listener: it runs once the close holds the device's lock, before the
            // cache's (which the acquire below registers).
            f.device.addCloseListener(d -> {
                closing.countDown();
                await(letGo);
            });
            Future<?> deviceClose = pool.submit(f.device::close);
            assertTrue(closing.await(10, TimeUnit.SECONDS), "the device's close holds its lock");
            Thread[] acquirer = {null};
            Future<?> acquire = pool.submit(() -> {
                acquirer[0] = Thread.currentThread();
                return f.cache.acquire(fresh, peer(1));
            });
            long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(10);
            while ((acquirer[0] == null || acquirer[0].getState() != Thread.State.WAITING) && System.nanoTime() < deadline) {
                Thread.onSpinWait();
            }
            letGo.countDown();
            deviceClose.get(10, TimeUnit.SECONDS);
            ExecutionException refused = assertThrows(ExecutionException.class, () -> acquire.get(10, TimeUnit.SECONDS));
            assertTrue(refused.getCause() instanceof IllegalStateException, refused.getCause().toString());
            f.cache.close();
        } finally {
            pool.shutdownNow();
        }
    }

    /** Issue 18: A registers N; someone else unregisters N; B registers N; A's close must leave B's bean. */
    @Test
    void aCacheUnregistersOnlyTheBeanItRegistered() throws Exception {
        ObjectName name = new ObjectName("org.efaah.test:type=AddressHandleCache,name=owned");
        try (MockFixture f = new MockFixture()) {
            AddressHandleCache a = AddressHandleCache.builder().leakDetection(LeakDetection.DISABLED).build();
            AddressHandleCache b = AddressHandleCache.builder().leakDetection(LeakDetection.DISABLED).build();
            a.inspection().registerMXBean(name.toString());
            SERVER.unregisterMBean(name);
            b.inspection().registerMXBean(name.toString());
            b.acquire(f.pd, peer(1)).close();
            a.close();
            assertTrue(SERVER.isRegistered(name), "A's close left B's bean");
            assertEquals(1L, SERVER.getAttribute(name, "Misses"), "and it is B's");
            b.close();
            assertFalse(SERVER.isRegistered(name));
        }
    }

    /**
     * Issue 18: {@code registerMXBean} racing {@code close()}. The registration is held right after
     * the MBean server took the bean (its registration notification, on the registering thread)
     * until the close has returned or is waiting; before the fix close returned with the bean still
     * registered for good.
     */
    @Test
    void registerMXBeanRacingCloseLeavesNoBean() throws Exception {
        ObjectName name = new ObjectName("org.efaah.test:type=AddressHandleCache,name=racing");
        ExecutorService pool = Executors.newSingleThreadExecutor();
        AddressHandleCache cache = AddressHandleCache.builder().leakDetection(LeakDetection.DISABLED).build();
        Thread[] closer = {null};
        NotificationListener hold = (notification, handback) -> {
            if (notification instanceof MBeanServerNotification n && name.equals(n.getMBeanName())
                    && MBeanServerNotification.REGISTRATION_NOTIFICATION.equals(n.getType())) {
                Thread c = new Thread(cache::close, "closer");
                closer[0] = c;
                c.start();
                long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(10);
                while (c.getState() != Thread.State.TERMINATED && c.getState() != Thread.State.BLOCKED
                        && c.getState() != Thread.State.WAITING && System.nanoTime() < deadline) {
                    Thread.onSpinWait();
                }
            }
        };
        SERVER.addNotificationListener(MBeanServerDelegate.DELEGATE_NAME, hold, null, null);
        try {
            Future<?> registering = pool.submit(() -> cache.inspection().registerMXBean(name.toString()));
            try {
                registering.get(10, TimeUnit.SECONDS);
            } catch (ExecutionException e) {
                assertTrue(e.getCause() instanceof IllegalStateException, e.getCause().toString());
            }
            closer[0].join(10_000);
            assertTrue(cache.isClosed());
            assertFalse(SERVER.isRegistered(name), "a bean outlived its closed cache");
        } finally {
            SERVER.removeNotificationListener(MBeanServerDelegate.DELEGATE_NAME, hold);
            if (SERVER.isRegistered(name)) {
                SERVER.unregisterMBean(name);
            }
            pool.shutdownNow();
        }
    }

    private static void await(CountDownLatch latch) {
        try {
            assertTrue(latch.await(10, TimeUnit.SECONDS));
        } catch (InterruptedException ie) {
            Thread.currentThread().interrupt();
        }
    }
}
