package org.efaah.verbs;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.ArrayList;
import java.util.List;
import org.efaah.cache.AddressHandle;
import org.efaah.cache.AddressHandleCache;
import org.efaah.verbs.mock.MockConfig;
import org.efaah.verbs.mock.MockVerbsProvider;
import org.junit.jupiter.api.Test;

/**
 * Issue 33, section 6: with no sgid_index given, a RoCE port's source GID is one of the peer's
 * family and scope (Device.resolve): a global IPv6 peer never gets the link-local GID, which routers
 * do not forward, and among global GIDs the one sharing the peer's subnet prefix wins. On EFA (the
 * mock's other device kind) sgid_index 0 whatever the peer.
 */
class RoceSourceGidTest {

    /** A RoCE device whose port 1 holds {@code gids} (address, type) in index order. */
    private static MockVerbsProvider roce(Object... gidsAndTypes) {
        List<Gid> gids = new ArrayList<>();
        List<GidType> types = new ArrayList<>();
        for (int i = 0; i < gidsAndTypes.length; i += 2) {
            gids.add(Gid.parse((String) gidsAndTypes[i]));
            types.add((GidType) gidsAndTypes[i + 1]);
        }
        return new MockVerbsProvider(MockConfig.builder().efa(false).gidTableLength(gids.size()).gids(gids)
                .gidTypes(types).build());
    }

    private static int source(Device d, String dgid) {
        return d.resolve(AddressHandleAttributes.forGid(dgid)).sgidIndex();
    }

    /** The port: link-local, IPv4 and global IPv6, each RoCE v2, in the order the kernel fills them. */
    @Test
    void aGlobalIpv6PeerGetsTheGlobalGidNotTheLinkLocalOne() {
        try (Device d = Device.openFirst(roce("fe80::1", GidType.ROCE_V2, "::ffff:10.0.0.1", GidType.ROCE_V2,
                "2001:db8:1::1", GidType.ROCE_V2))) {
            assertEquals(2, source(d, "2001:db8:7::99"), "a global peer's source GID is global");
            assertEquals(0, source(d, "fe80::99"), "a link-local peer's is link-local");
            assertEquals(1, source(d, "::ffff:10.0.9.9"), "an IPv4 peer's is the IPv4 GID");
        }
    }

    /** As rxe and mlx5 fill a table: a RoCE v1 and a v2 entry per address; v1 is never chosen. */
    @Test
    void amongGlobalGidsTheOneSharingThePeersSubnetPrefixWins() {
        try (Device d = Device.openFirst(roce(
                "fe80::1", GidType.ROCE_V1, "fe80::1", GidType.ROCE_V2,
                "2001:db8:1::1", GidType.ROCE_V1, "2001:db8:1::1", GidType.ROCE_V2,
                "::ffff:10.0.0.1", GidType.ROCE_V1, "::ffff:10.0.0.1", GidType.ROCE_V2,
                "2001:db8:7::1", GidType.ROCE_V1, "2001:db8:7::1", GidType.ROCE_V2,
                "::ffff:192.168.5.1", GidType.ROCE_V2, "::ffff:169.254.3.4", GidType.ROCE_V2,
                "2001:db8:7::98", GidType.ROCE_V2, "::", GidType.ROCE_V2))) {
            assertEquals(7, source(d, "2001:db8:7::99"), "the GID in the peer's /64; bits past the subnet"
                    + " prefix do not count (index 10 shares more), the lowest index on a tie");
            assertEquals(3, source(d, "2001:db8:1::42"), "the GID in the peer's /64");
            assertEquals(3, source(d, "2001:db8:2::5"), "no /64 shared: the longest prefix");
            assertEquals(3, source(d, "2001:db9::5"), "no /64 shared, prefixes as long: the lowest index");
            assertEquals(1, source(d, "fe80::1234"), "link-local peer: link-local GID, v2");
            assertEquals(5, source(d, "::ffff:10.1.2.3"), "IPv4: the longest shared prefix");
            assertEquals(8, source(d, "::ffff:192.168.5.77"), "IPv4: the longest shared prefix");
            assertEquals(9, source(d, "::ffff:169.254.9.9"), "IPv4 link-local peer: the IPv4 link-local GID");
            assertEquals(8, source(d, "::ffff:169.255.0.1"), "IPv4 global peer beside 169.254/16: never the"
                    + " IPv4 link-local GID, though it shares the longest prefix");
        }
    }

    /** Fallback: no GID of the peer's scope, one of the other scope (the peer on the same link can be reached). */
    @Test
    void withoutAGidOfThePeersScopeTheOtherScopeIsTheFallback() {
        try (Device d = Device.openFirst(roce("fe80::1", GidType.ROCE_V2, "::ffff:10.0.0.1", GidType.ROCE_V2,
                "2001:db8:1::1", GidType.ROCE_V1))) {
            assertEquals(0, source(d, "2001:db8:7::99"), "only a link-local v2 GID: that one");
        }
        try (Device d = Device.openFirst(roce("2001:db8:1::1", GidType.ROCE_V2, "fe80::1", GidType.ROCE_V1))) {
            assertEquals(0, source(d, "fe80::99"), "only a global v2 GID: that one");
            IllegalArgumentException e = assertThrows(IllegalArgumentException.class,
                    () -> source(d, "::ffff:10.0.0.5"));
            assertTrue(e.getMessage().contains("has no RoCE v2 IPv4 GID for dgid ::ffff:10.0.0.5"), e.getMessage());
        }
    }

    /** Through a cache: the AH made for a global peer without sgid_index carries the global source GID. */
    @Test
    void aCacheAcquireForAGlobalPeerMakesItsAhFromTheGlobalGid() {
        try (Device d = Device.openFirst(roce("fe80::1", GidType.ROCE_V2, "::ffff:10.0.0.1", GidType.ROCE_V2,
                "2001:db8:1::1", GidType.ROCE_V2));
             ProtectionDomain pd = d.allocatePd(); AddressHandleCache cache = AddressHandleCache.create();
             AddressHandle global = cache.acquire(pd, AddressHandleAttributes.forGid("2001:db8:7::99"));
             AddressHandle local = cache.acquire(pd, AddressHandleAttributes.forGid("fe80::99"))) {
            assertEquals(2, global.hardware().attributes().sgidIndex());
            assertEquals(Gid.parse("2001:db8:1::1"), d.gid(1, global.hardware().attributes().sgidIndex()));
            assertEquals(0, local.hardware().attributes().sgidIndex());
        }
    }

    /** EFA, the mock's other device kind: one GID, sgid_index 0 whatever the peer's scope. */
    @Test
    void onEfaTheSourceIsIndexZeroWhateverThePeersScope() {
        try (Device d = Device.openFirst(new MockVerbsProvider(MockConfig.builder().gidTableLength(1)
                .gids(List.of(Gid.parse("fe80::efa:0:0:1"))).build()))) {
            for (String peer : List.of("2001:db8:7::99", "fe80::99", "::ffff:10.0.0.5")) {
                assertEquals(0, source(d, peer), peer);
            }
        }
    }
}
