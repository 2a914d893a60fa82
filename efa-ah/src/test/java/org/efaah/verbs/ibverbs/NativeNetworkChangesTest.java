package org.efaah.verbs.ibverbs;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTimeoutPreemptively;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import org.bytedeco.javacpp.Loader;
import org.efaah.verbs.spi.NetworkChange;
import org.junit.jupiter.api.Test;

/**
 * Issue 20 item 1, native side, on this host with no RDMA device: the rtnetlink channel reads the
 * host's links and neighbours (dumps need no privilege), a wake-up ends a wait at once, and the
 * struct's layout in Java matches C.
 */
class NativeNetworkChangesTest {

    @Test
    void networkEventLayoutInJavaMatchesTheStruct() {
        NativeTestSupport.assumeLoaded();
        assertEquals(NativeVerbs.NetEvent.SIZE, Loader.sizeof(NativeVerbs.NetEvent.class));
        assertEquals(NativeVerbs.NetEvent.TYPE, Loader.offsetof(NativeVerbs.NetEvent.class, "type"));
        assertEquals(NativeVerbs.NetEvent.IFINDEX, Loader.offsetof(NativeVerbs.NetEvent.class, "ifindex"));
        assertEquals(NativeVerbs.NetEvent.STATE, Loader.offsetof(NativeVerbs.NetEvent.class, "state"));
        assertEquals(NativeVerbs.NetEvent.MTU, Loader.offsetof(NativeVerbs.NetEvent.class, "mtu"));
        assertEquals(NativeVerbs.NetEvent.FLAGS, Loader.offsetof(NativeVerbs.NetEvent.class, "flags"));
        assertEquals(NativeVerbs.NetEvent.ADDR, Loader.offsetof(NativeVerbs.NetEvent.class, "addr"));
        assertEquals(NativeVerbs.NetEvent.LLADDR, Loader.offsetof(NativeVerbs.NetEvent.class, "lladdr"));
        assertEquals(NativeVerbs.NetEvent.IFNAME, Loader.offsetof(NativeVerbs.NetEvent.class, "ifname"));
    }

    private static List<NetworkChange> untilDumpDone(NativeVerbsProvider p, long channel) {
        List<NetworkChange> all = new ArrayList<>();
        for (int i = 0; i < 1000; i++) {
            List<NetworkChange> some = p.awaitNetworkChanges(channel, 5000);
            assertTrue(!some.isEmpty(), "the dump did not end within 5 s; read " + all.size());
            all.addAll(some);
            if (some.stream().anyMatch(c -> c.type() == NetworkChange.Type.DUMP_DONE)) {
                return all;
            }
        }
        throw new AssertionError("no end of dump after " + all.size() + " changes");
    }

    @Test
    void readsThisHostsLinksAndNeighboursAndAWakeEndsAWait() {
        NativeTestSupport.assumeLoaded();
        NativeVerbsProvider p = new NativeVerbsProvider();
        long channel = p.openNetworkChanges();
        try {
            p.requestNetworkDump(channel, true);
            List<NetworkChange> links = untilDumpDone(p, channel);
            NetworkChange lo = links.stream().filter(c -> c.type() == NetworkChange.Type.LINK && c.ifname().equals("lo"))
                    .findFirst().orElseThrow(() -> new AssertionError("no lo in " + links));
            assertTrue(lo.fromDump());
            assertEquals(65536, lo.mtu());
            assertEquals(NetworkChange.IFF_UP, lo.state() & NetworkChange.IFF_UP);
            p.requestNetworkDump(channel, false);
            List<NetworkChange> neighbours = untilDumpDone(p, channel);
            assertTrue(neighbours.stream().filter(c -> c.type() != NetworkChange.Type.DUMP_DONE)
                    .allMatch(c -> c.type() == NetworkChange.Type.NEIGHBOUR && c.neighbourGid() != null), neighbours.toString());
            p.wakeNetworkChanges(channel);
            assertTimeoutPreemptively(Duration.ofSeconds(2), () -> assertEquals(List.of(), p.awaitNetworkChanges(channel, -1)));
        } finally {
            p.closeNetworkChanges(channel);
        }
    }
}
