package org.efaah.cache;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.lang.management.ManagementFactory;
import java.util.Arrays;
import java.util.List;
import javax.management.MBeanAttributeInfo;
import javax.management.MBeanInfo;
import javax.management.ObjectName;
import org.junit.jupiter.api.Test;

/** Issue 18: the MXBean's attributes were described by their names alone and it had no operations. */
class MXBeanInfoTest {

    @Test
    void everyAttributeIsDescribedAndTheOperationsAreThere() throws Exception {
        try (AddressHandleCache cache = AddressHandleCache.builder().leakDetection(LeakDetection.DISABLED).build()) {
            ObjectName name = cache.inspection().registerMXBean("org.efaah:type=AddressHandleCache,name=MXBeanInfoTest");
            MBeanInfo info = ManagementFactory.getPlatformMBeanServer().getMBeanInfo(name);
            for (MBeanAttributeInfo a : info.getAttributes()) {
                assertTrue(a.getDescription().contains(" "), a.getName() + " is described as '" + a.getDescription() + "'");
            }
            List<String> operations = Arrays.stream(info.getOperations()).map(o -> o.getName()).sorted().toList();
            assertEquals(List.of("entries", "invalidateAll"), operations);
            assertTrue(Arrays.stream(info.getAttributes()).anyMatch(a -> a.getName().equals("Health")));
        }
    }
}
