package org.efaah.cli;

import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import org.efaah.cache.AddressHandle;
import org.efaah.cache.AddressHandleCache;
import org.efaah.cache.LeakDetection;
import org.efaah.verbs.AddressHandleAttributes;
import org.efaah.verbs.Device;
import org.efaah.verbs.DeviceEvent;
import org.efaah.verbs.Errno;
import org.efaah.verbs.Gid;
import org.efaah.verbs.ProtectionDomain;
import org.efaah.verbs.VerbsException;
import org.efaah.verbs.mock.MockConfig;
import org.efaah.verbs.mock.MockVerbsProvider;

/**
 * A service in its own JVM for the JMX tests: a mock device (max_ah from the first argument), a
 * cache registered as {@code org.efaah:type=AddressHandleCache,name=svc}, driven by lines on
 * standard input ({@code hold N}, {@code release}, {@code fail}, {@code port STATE}, {@code fatal},
 * {@code quit}); answers each with {@code ok} on standard output.
 */
public final class CacheService {
    private CacheService() {
    }

    public static void main(String[] args) throws Exception {
        MockVerbsProvider mock = new MockVerbsProvider(MockConfig.builder().maxAh(Integer.parseInt(args[0])).build());
        Device device = Device.openFirst(mock);
        ProtectionDomain pd = device.allocatePd();
        AddressHandleCache cache = AddressHandleCache.builder().leakDetection(LeakDetection.DISABLED).build();
        cache.inspection().registerMXBean("org.efaah:type=AddressHandleCache,name=svc");
        List<AddressHandle> held = new ArrayList<>();
        int next = 1;
        System.out.println("ready");
        BufferedReader in = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));
        for (String line; (line = in.readLine()) != null; ) {
            String[] w = line.trim().split(" ");
            switch (w[0]) {
                case "hold" -> {
                    for (int i = 0, n = Integer.parseInt(w[1]); i < n; i++) {
                        held.add(cache.acquire(pd, AddressHandleAttributes.forGid(Gid.of(0xfe80L << 48, next++))));
                    }
                }
                case "release" -> {
                    held.forEach(AddressHandle::close);
                    held.clear();
                }
                case "fail" -> {
                    mock.failNextCreates(1, Errno.EIO);
                    try {
                        cache.acquire(pd, AddressHandleAttributes.forGid(Gid.of(0xfe80L << 48, next++))).close();
                    } catch (VerbsException expected) {
                        // The failure is what the health report is to show.
                    }
                }
                case "port" -> mock.setPortState(device.name(), Integer.parseInt(w[1]));
                case "fatal" -> {
                    mock.raiseEvent(device.name(), DeviceEvent.Kind.DEVICE_FATAL, 0);
                    while (!device.isFatal()) {
                        Thread.sleep(5);
                    }
                }
                case "quit" -> {
                    held.forEach(AddressHandle::close);
                    cache.close();
                    device.close();
                    System.out.println("ok");
                    return;
                }
                default -> throw new IllegalArgumentException(line);
            }
            System.out.println("ok");
        }
    }
}
