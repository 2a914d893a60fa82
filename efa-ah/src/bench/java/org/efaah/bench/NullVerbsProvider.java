package org.efaah.bench;

import java.util.List;
import java.util.concurrent.atomic.AtomicLong;
import org.efaah.verbs.AddressHandleAttributes;
import org.efaah.verbs.spi.CreatedAh;
import org.efaah.verbs.DeviceAttributes;
import org.efaah.verbs.Gid;
import org.efaah.verbs.PortAttributes;
import org.efaah.verbs.spi.VerbsProvider;

/**
 * A provider that keeps nothing and has no max_ah, for the scale figures only: the mock caps
 * max_ah at 65,536 per device (AHNs are 16-bit) and keeps its own tables per AH, which would
 * both stop a million creates on one PD and blur the heap the cache itself retains.
 *
 * <p>One EFA-like device, so the cache keys by dgid as on EFA. AHNs wrap at 16 bits; nothing
 * here or in the cache relies on their being unique.
 */
final class NullVerbsProvider implements VerbsProvider {
    private static final Gid LOCAL_GID = Gid.of(0xfe80_0000_0000_0000L, 0x0200_00ff_fe00_0001L);

    private final AtomicLong nextHandle = new AtomicLong(0x1000);

    @Override
    public String name() {
        return "null";
    }

    @Override
    public List<String> deviceNames() {
        return List.of("null_0");
    }

    @Override
    public long openDevice(String name) {
        return nextHandle.getAndIncrement();
    }

    @Override
    public void closeDevice(long context) {
    }

    @Override
    public DeviceAttributes queryDevice(long context) {
        return new DeviceAttributes("null_0", DeviceAttributes.AMAZON_VENDOR_ID, 0xefa3, Integer.MAX_VALUE, 256, 1, true,
                DeviceAttributes.TRANSPORT_UNSPECIFIED, "0.0.0.0", 0, 0, 0xefa3,
                new DeviceAttributes.Limits(0, 0xffff_f000L, 256, 8192, 0, 1, 1, 512, 32768, 262144, 0, 0, 0, 0, 0,
                        0),
                new DeviceAttributes.IbLimits(0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1, 0));
    }

    @Override
    public PortAttributes queryPort(long context, int portNum) {
        return new PortAttributes(portNum, PortAttributes.STATE_ACTIVE, PortAttributes.LINK_LAYER_UNSPECIFIED, 1, 4096, 0, 8928,
                4096, 0, 1, new PortAttributes.Details(0, 0, 1, 0, 0, 0, 1, 0, 0, 2, 32, 5));
    }

    @Override
    public Gid queryGid(long context, int portNum, int index) {
        return LOCAL_GID;
    }

    @Override
    public long allocatePd(long context) {
        return nextHandle.getAndIncrement();
    }

    @Override
    public void deallocatePd(long pd) {
    }

    @Override
    public CreatedAh createAh(long pd, AddressHandleAttributes attributes) {
        long h = nextHandle.getAndIncrement();
        return new CreatedAh(h, (int) (h & 0xFFFF));
    }

    @Override
    public void destroyAh(long ah) {
    }

    @Override
    public void close() {
    }
}
