package org.efaah.cache;

import java.lang.management.ManagementFactory;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import javax.management.JMException;
import javax.management.ObjectName;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The platform MBean server names a cache registered its {@link AddressHandleCacheMXBean} under,
 * so that closing the cache unregisters them. Takes no lock of the cache (the list is
 * copy-on-write); the MBean server's own locking is its business.
 */
final class MXBeanRegistrations {
    private static final Logger LOG = LoggerFactory.getLogger(AddressHandleCache.class);

    private final List<ObjectName> names = new CopyOnWriteArrayList<>();

    /** Registers an adapter over {@code cache} under {@code objectName}; see {@link AddressHandleCache#registerMXBean}. */
    ObjectName register(AddressHandleCache cache, String objectName) {
        try {
            ObjectName name = new ObjectName(objectName);
            ManagementFactory.getPlatformMBeanServer().registerMBean(new CacheMXBeanAdapter(cache), name);
            names.add(name);
            return name;
        } catch (JMException e) {
            throw new IllegalArgumentException("objectName: '" + objectName + "' cannot be registered: " + e.getMessage(), e);
        }
    }

    /** Unregisters every name registered; a failure is logged, never thrown (the cache is closing). */
    void unregisterAll() {
        for (ObjectName name : names) {
            try {
                ManagementFactory.getPlatformMBeanServer().unregisterMBean(name);
            } catch (JMException e) {
                LOG.warn("could not unregister {}: {}", name, e.toString());
            }
        }
    }
}
