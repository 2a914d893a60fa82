package org.efaah.cache;

import java.lang.management.ManagementFactory;
import java.util.ArrayList;
import java.util.List;
import javax.management.InstanceNotFoundException;
import javax.management.JMException;
import javax.management.MBeanRegistrationException;
import javax.management.MBeanServer;
import javax.management.ObjectName;

/**
 * The {@link AddressHandleCacheMXBean}s a cache registered with the platform MBean server, so
 * that closing the cache unregisters them, and only them.
 *
 * <p>Rules. Registration and {@link #unregisterAll()} hold this object's monitor, and
 * registration after it is refused, so a bean registered while the cache closes is either
 * unregistered by that close or never registered. A name is unregistered only while it still
 * names this cache's own bean: each bean knows when it was unregistered (by anyone), and one
 * cache's close refuses, from inside the MBean server's unregistration, to unregister another
 * cache's bean that took over the name since. The monitor is held while calling the MBean server,
 * which never calls back into it.
 */
final class MXBeanRegistrations {
    /** The registrations whose close is unregistering on this thread, for {@link OwnBean#preDeregister}. */
    private static final ThreadLocal<MXBeanRegistrations> CLOSING = new ThreadLocal<>();

    private final List<OwnBean> beans = new ArrayList<>(); // guarded by this
    private boolean closed; // guarded by this

    /** A cache's bean; says so when a closing cache tries to unregister someone else's. */
    private final class OwnBean extends CacheMXBeanAdapter {
        final ObjectName name;
        volatile boolean registered = true;

        OwnBean(AddressHandleCache cache, ObjectName name) {
            super(cache);
            this.name = name;
        }

        @Override
        public void preDeregister() throws Exception {
            MXBeanRegistrations closing = CLOSING.get();
            if (closing != null && closing != MXBeanRegistrations.this) {
                throw new IllegalStateException(name + " is another cache's bean now");
            }
            super.preDeregister();
        }

        @Override
        public void postDeregister() {
            registered = false;
            super.postDeregister();
        }
    }

    /** Registers an adapter over {@code cache} under {@code objectName}; see {@link CacheInspection#registerMXBean}. */
    synchronized ObjectName register(AddressHandleCache cache, String objectName) {
        if (closed) {
            throw new IllegalStateException("address handle cache is closed");
        }
        try {
            ObjectName name = new ObjectName(objectName);
            OwnBean bean = new OwnBean(cache, name);
            ManagementFactory.getPlatformMBeanServer().registerMBean(bean, name);
            beans.add(bean);
            return name;
        } catch (JMException e) {
            throw new IllegalArgumentException("objectName: '" + objectName + "' cannot be registered: " + e.getMessage(), e);
        }
    }

    /**
     * Unregisters every bean this cache registered that is still registered, and refuses
     * registrations from now on; never throws (the cache is closing).
     */
    synchronized void unregisterAll() {
        closed = true;
        if (beans.isEmpty()) {
            // Asking for the platform MBean server makes it, and registers every JDK MXBean (JFR's
            // among them): about 200 classes and a tenth of a second for a command line that
            // registered nothing.
            return;
        }
        MBeanServer server = ManagementFactory.getPlatformMBeanServer();
        CLOSING.set(this);
        try {
            for (OwnBean bean : beans) {
                if (!bean.registered) {
                    continue; // someone else unregistered it; the name may be another cache's now
                }
                try {
                    server.unregisterMBean(bean.name);
                } catch (InstanceNotFoundException | MBeanRegistrationException notOurs) {
                    // Unregistered by someone else meanwhile, or another cache's bean took the name.
                }
            }
            beans.clear();
        } finally {
            CLOSING.remove();
        }
    }
}
