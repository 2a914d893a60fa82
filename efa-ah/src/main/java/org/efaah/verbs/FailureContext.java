package org.efaah.verbs;

/**
 * Builds the context added to a failed verb's {@link VerbsException}: what it was done on (device,
 * PD, GIDs) and a one-line hint for the errnos whose usual cause is known. Runs on failure paths
 * only, so it may query the device.
 */
final class FailureContext {
    private FailureContext() {
    }

    /** {@code ibv_create_ah} failed in {@code pd} for {@code attributes} (sgid_index resolved). */
    static String createAh(ProtectionDomain pd, AddressHandleAttributes attributes, VerbsException failure) {
        Device device = pd.device();
        StringBuilder b = new StringBuilder("device ").append(device.name()).append(", ").append(pd.describe());
        int port = attributes.portNum();
        if (attributes.isGlobal()) {
            b.append(", local GID ").append(localGid(device, port, attributes.sgidIndex()))
                    .append(" (port ").append(port).append(" sgid_index ").append(attributes.sgidIndex()).append(')')
                    .append(", remote GID ").append(attributes.dgid());
        } else {
            b.append(", port ").append(port).append(", dlid ").append(attributes.dlid());
        }
        String hint = switch (failure.errno()) {
            case EINVAL -> "the destination is not reachable from this GID (another subnet or availability zone?),"
                    + " or sgid_index names the wrong GID";
            case ETIMEDOUT -> "no neighbour entry for the destination: its MAC address could not be resolved";
            case ENOMEM -> "max_ah " + device.attributes().maxAh() + " reached? " + device.liveAhCount()
                    + " AH(s) live on " + device.name() + " through this library";
            case ENODATA -> "the GID slot at sgid_index " + attributes.sgidIndex() + " is empty";
            default -> null;
        };
        return hint == null ? b.toString() : b.append("; hint: ").append(hint).toString();
    }

    /** {@code ibv_alloc_pd} failed on {@code device}. */
    static String allocatePd(Device device, VerbsException failure) {
        String s = "device " + device.name();
        if (failure.errno() == Errno.ENOMEM) {
            s += "; hint: max_pd " + device.attributes().maxPd() + " reached? " + device.livePdCount()
                    + " PD(s) allocated on it through this library";
        }
        return s;
    }

    /** A CQ, MR or QP create failed: the device (and PD) it was made on. */
    static String resource(Device device, ProtectionDomain pd) {
        return "device " + device.name() + (pd == null ? "" : ", " + pd.describe());
    }

    private static String localGid(Device device, int port, int index) {
        try {
            Gid gid = device.gid(port, index);
            return gid.isZero() ? ":: (empty slot)" : gid.toString();
        } catch (RuntimeException e) {
            return "unreadable (" + e.getMessage() + ")";
        }
    }
}
