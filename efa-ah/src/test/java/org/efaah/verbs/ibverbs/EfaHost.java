package org.efaah.verbs.ibverbs;

import java.util.ArrayList;
import java.util.List;
import org.efaah.verbs.DeviceAttributes;
import org.efaah.verbs.Gid;
import org.junit.jupiter.api.Assumptions;

/**
 * The first EFA device of this host (vendor 0x1d0f) opened through the native provider's SPI,
 * for the gated tests that need raw verbs; a skip, saying what the host has, everywhere else
 * (the soft-RoCE VM included).
 */
final class EfaHost implements AutoCloseable {
    /** The Q_Key every QP of these tests uses. */
    static final int QKEY = 0x11111111;

    final NativeVerbsProvider provider;
    final long context;
    final DeviceAttributes attributes;
    final Gid gid;

    private EfaHost(NativeVerbsProvider provider, long context, DeviceAttributes attributes) {
        this.provider = provider;
        this.context = context;
        this.attributes = attributes;
        this.gid = provider.queryGid(context, 1, 0);
    }

    static EfaHost openOrSkip() {
        NativeTestSupport.assumeDevice();
        NativeVerbsProvider provider = new NativeVerbsProvider();
        List<String> others = new ArrayList<>();
        for (String name : provider.deviceNames()) {
            long context = provider.openDevice(name);
            DeviceAttributes attributes = provider.queryDevice(context);
            if (attributes.vendorId() == DeviceAttributes.AMAZON_VENDOR_ID) {
                return new EfaHost(provider, context, attributes);
            }
            provider.closeDevice(context);
            others.add(name + " (vendor 0x" + Integer.toHexString(attributes.vendorId()) + ")");
        }
        Assumptions.abort("EFA-only: no device with vendor id 0x1d0f; this host has " + others);
        throw new AssertionError("unreachable");
    }

    /** Prints one measured figure; scripts/efa-host-report collects these lines into its report. */
    static void figure(String format, Object... args) {
        System.out.println("FIGURE EFA " + String.format(format, args));
    }

    @Override
    public void close() {
        provider.closeDevice(context);
    }
}
