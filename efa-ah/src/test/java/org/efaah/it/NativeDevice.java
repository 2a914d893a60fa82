package org.efaah.it;

import static org.junit.jupiter.api.Assertions.fail;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.util.ArrayList;
import java.util.List;
import org.efaah.verbs.Device;
import org.efaah.verbs.Gid;
import org.efaah.verbs.spi.VerbsProvider;
import org.efaah.verbs.spi.VerbsProviderFactory;
import org.efaah.verbs.VerbsProviders;
import org.junit.jupiter.api.Assumptions;

/**
 * What the native integration tests need to know about where they run: the soft-RoCE VM of
 * {@code scripts/rxe-vm} (EFA_AH_VM=1), an EFA host, or a machine with no device, where they
 * skip saying why, or fail when {@value #REQUIRE_DEVICE} is true.
 */
final class NativeDevice {
    /** System property (set by the native-it profile): true makes "no device" a failure, not a skip. */
    static final String REQUIRE_DEVICE = "efaah.test.requireDevice";

    private NativeDevice() {
    }

    static boolean inVm() {
        return "1".equals(System.getenv("EFA_AH_VM"));
    }

    /** The native provider, or a skip (a failure under {@value #REQUIRE_DEVICE}) with the reason. */
    static VerbsProvider provider() {
        VerbsProviderFactory factory = VerbsProviders.factories().stream().filter(f -> f.name().equals("native"))
                .findFirst().orElse(null);
        String why = factory == null ? "the native provider is not on the class path"
                : factory.isAvailable() ? null : VerbsProviders.describe(factory.unavailabilityCause());
        if (why != null) {
            if (Boolean.getBoolean(REQUIRE_DEVICE) || inVm()) {
                fail("a verbs device is required here but the native provider is unavailable: " + why);
            }
            Assumptions.abort("no verbs device for native integration tests: " + why);
        }
        return factory.create();
    }

    /** The device to test: $EFA_AH_VM_DEVICE in the VM, else the first one listed. */
    static Device open(VerbsProvider provider) {
        String name = System.getenv("EFA_AH_VM_DEVICE");
        return name == null ? Device.openFirst(provider) : Device.open(provider, name);
    }

    /** GID index of this host's own address: $EFA_AH_VM_GID_INDEX in the VM, else 0. */
    static int gidIndex() {
        String v = System.getenv("EFA_AH_VM_GID_INDEX");
        return v == null ? 0 : Integer.parseInt(v.trim());
    }

    /**
     * {@code n} remote peers an AH can be created to. In the VM: the invented peers with static
     * neighbour entries (::ffff:10.9.X.Y); elsewhere invented unique-local GIDs, which RoCE takes
     * at create time but EFA does not: on a device that may be EFA use {@link #peers(Device, int)}.
     */
    static List<Gid> peers(int n) {
        List<Gid> list = new ArrayList<>();
        if (inVm()) {
            int nets = Integer.parseInt(System.getenv().getOrDefault("EFA_AH_VM_PEER_NETS", "8"));
            for (int x = 1; x <= nets && list.size() < n; x++) {
                for (int y = 1; y <= 250 && list.size() < n; y++) {
                    list.add(Gid.parse("::ffff:10.9." + x + "." + y));
                }
            }
            if (list.size() < n) {
                fail("the VM has only " + list.size() + " peers; " + n + " wanted (scripts/rxe-vm --peer-nets)");
            }
        } else {
            for (int i = 0; i < n; i++) {
                list.add(Gid.of(0xfd00_0000_0000_0000L, i + 1));
            }
        }
        return list;
    }

    /**
     * Up to {@code n} GIDs an AH on {@code device} can be created to. EFA refuses an AH to a GID
     * that does not exist in its fabric ({@code EINVAL}: libfabric PR #12136), so on EFA these are
     * real GIDs: the device's own, then every other EFA device's on this host, however many fewer
     * than {@code n} that is (one on a host with one device). Elsewhere {@link #peers(int)}.
     */
    static List<Gid> peers(Device device, int n) {
        if (!device.isEfa()) {
            return peers(n);
        }
        List<Gid> list = new ArrayList<>(List.of(device.gid(1, 0)));
        for (String name : device.provider().deviceNames()) {
            if (list.size() >= n) {
                break;
            }
            if (!name.equals(device.name())) {
                try (Device other = Device.open(device.provider(), name)) {
                    Gid gid = other.isEfa() ? other.gid(1, 0) : null;
                    if (gid != null && !list.contains(gid)) {
                        list.add(gid);
                    }
                }
            }
        }
        return list;
    }

    /** Index in port 1's GID table of {@code gid}, or -1. */
    static int indexOf(Device device, int port, Gid gid) {
        int length = device.port(port).gidTableLength();
        for (int i = 0; i < length; i++) {
            try {
                if (device.gid(port, i).equals(gid)) {
                    return i;
                }
            } catch (RuntimeException emptySlot) {
                // Newer kernels answer an unused slot with an error.
            }
        }
        return -1;
    }

    /** Prints a measured figure and appends it to $EFA_AH_VM_OUT/figures.txt when there is one. */
    static void figure(String line) {
        System.out.println("FIGURE " + line);
        String out = System.getenv("EFA_AH_VM_OUT");
        if (out != null) {
            try {
                Files.writeString(Path.of(out, "figures.txt"), line + System.lineSeparator(),
                        StandardOpenOption.CREATE, StandardOpenOption.APPEND);
            } catch (IOException e) {
                System.err.println("could not record figure: " + e);
            }
        }
    }
}
