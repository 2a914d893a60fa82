package org.efaah.verbs.ibverbs;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HexFormat;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import org.efaah.verbs.AddressHandleAttributes;
import org.efaah.verbs.spi.CreatedAh;
import org.efaah.verbs.EfaDeviceAttributes;
import org.efaah.verbs.spi.EfaVerbs;
import org.efaah.verbs.Gid;
import org.efaah.verbs.PortAttributes;
import org.efaah.verbs.QueuePairState;
import org.efaah.verbs.QueuePairType;
import org.efaah.verbs.VerbsException;
import org.efaah.verbs.WorkCompletion;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.MethodOrderer;
import org.junit.jupiter.api.Order;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestMethodOrder;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;

/**
 * Issue 16 item 9, on an EFA host only (vendor 0x1d0f; skipped elsewhere, saying why): what the
 * device does at the verbs level, through the SPI with no endpoint in between, for the report of
 * {@code scripts/efa-host-report}. Each test prints every figure first ("FIGURE EFA ...") and
 * asserts last, so a failed expectation still leaves its figures. Two QPs on one device stand in
 * for two hosts: the sender's GID is the device's own.
 */
@Tag("native")
@TestMethodOrder(MethodOrderer.OrderAnnotation.class)
class EfaHostFiguresTest {
    private static final int SLOT = 16384;
    private static final long WAIT_MILLIS = 5_000;

    private EfaHost host;
    private final List<AutoCloseable> open = new ArrayList<>();

    @BeforeEach
    void openEfa() {
        host = EfaHost.openOrSkip();
    }

    @AfterEach
    void closeAll() throws Exception {
        for (int i = open.size() - 1; i >= 0; i--) {
            open.get(i).close();
        }
        if (host != null) {
            host.close();
        }
    }

    private EfaRawQp qp(QueuePairType type, int rnrRetry) {
        return qp(type, rnrRetry, SLOT);
    }

    private EfaRawQp qp(QueuePairType type, int rnrRetry, int slotSize) {
        EfaRawQp qp = new EfaRawQp(host, type, rnrRetry, slotSize, 8);
        open.add(qp);
        return qp;
    }

    /** An AH in {@code qp}'s PD to this device's own GID, destroyed after the test. */
    private CreatedAh ahIn(EfaRawQp qp) {
        CreatedAh ah = host.provider.createAh(qp.pd, AddressHandleAttributes.forGid(host.gid));
        open.add(open.indexOf(qp) + 1, () -> host.provider.destroyAh(ah.handle()));
        return ah;
    }

    private static byte[] payload(int size) {
        byte[] b = new byte[size];
        for (int i = 0; i < size; i++) {
            b[i] = (byte) (0xA0 + i);
        }
        return b;
    }

    @Test
    @Order(1)
    void deviceAndPortAttributes() {
        PortAttributes port = host.provider.queryPort(host.context, 1);
        EfaDeviceAttributes efa = host.provider.efa().queryDevice(host.context);
        int families = NativeVerbs.efa_ah_efadv_families();
        EfaHost.figure("device %s: vendor 0x%x, vendor_part_id 0x%x, max_ah %d, max_pd %d, GID %s",
                host.attributes.name(), host.attributes.vendorId(), host.attributes.vendorPartId(),
                host.attributes.maxAh(), host.attributes.maxPd(), host.gid);
        EfaHost.figure("port 1: state %d, active_mtu %d, max_msg_sz %d, gid_tbl_len %d, link_layer %d", port.state(),
                port.activeMtu(), port.maxMessageSize(), port.gidTableLength(), port.linkLayer());
        EfaHost.figure("efadv_query_device: max_sq_wr %d, max_rq_wr %d, max_sq_sge %d, max_rq_sge %d, inline_buf_size %d,"
                        + " inline_buf_size_ex %d, max_rdma_size %d, device_caps 0x%x (RNR_RETRY %b, CQ_WITH_SGID %b)",
                efa.maxSqWr(), efa.maxRqWr(), efa.maxSqSge(), efa.maxRqSge(), efa.inlineBufferSize(),
                efa.inlineBufferSizeEx(), efa.maxRdmaSize(), efa.deviceCaps(), efa.supportsRnrRetry(),
                efa.supportsCqWithSgid());
        EfaHost.figure("libefa.so.1 entry points: query %b, CQ with SGID %b, SRD %b",
                (families & NativeVerbs.EFADV_QUERY) != 0, (families & NativeVerbs.EFADV_CQ) != 0,
                (families & NativeVerbs.EFADV_SRD) != 0);
        mappedLibraries().forEach((name, file) -> EfaHost.figure("mapped %s: %s", name, file));
        assertTrue(host.attributes.efa(), "efadv_query_device answered");
        assertTrue(efa.maxSqWr() > 0 && efa.maxRqWr() > 0, "queue limits");
        assertTrue(port.maxMessageSize() >= port.activeMtu(), "max_msg_sz is at least the MTU");
    }

    /*
     * The files this JVM mapped, read from /proc/self/maps once libefa has been used: which
     * libibverbs, libefa and provider the tests ran over (ldconfig -p only tells what a new
     * process would find).
     */
    private static Map<String, String> mappedLibraries() {
        List<String> files = new ArrayList<>();
        try {
            for (String line : Files.readAllLines(Path.of("/proc/self/maps"))) {
                int slash = line.indexOf('/');
                if (slash >= 0) {
                    files.add(line.substring(slash));
                }
            }
        } catch (IOException e) {
            return Map.of("libraries", "unknown (" + e + ")");
        }
        return mappedLibraries(files, List.of());
    }

    /**
     * From the mapped {@code files}: libibverbs, libefa and the provider libibverbs loaded. rdma-core
     * installs the provider, {@code libibverbs/libefa-rdmav*.so} beside libibverbs, as a symlink to
     * {@code libefa.so.1.N}, and the maps name the target: the provider is the link whose target is
     * mapped, looked for in libibverbs' own directory and in {@code moreDirs}.
     */
    static Map<String, String> mappedLibraries(List<String> files, List<Path> moreDirs) {
        Map<String, String> found = new TreeMap<>();
        for (String file : files) {
            String base = file.substring(file.lastIndexOf('/') + 1);
            if (base.startsWith("libibverbs.so") || base.startsWith("libefa.so") || base.startsWith("libefa-rdmav")) {
                found.putIfAbsent(base.startsWith("libefa-rdmav") ? "provider" : base.substring(0, base.indexOf(".so")), file);
            }
        }
        if (!found.containsKey("provider")) {
            List<Path> dirs = new ArrayList<>();
            if (found.containsKey("libibverbs")) {
                dirs.add(Path.of(found.get("libibverbs")).resolveSibling("libibverbs"));
            }
            dirs.addAll(moreDirs);
            for (Path dir : dirs) {
                try (var links = Files.newDirectoryStream(dir, "libefa-rdmav*.so")) {
                    for (Path link : links) {
                        String target = link.toRealPath().toString();
                        if (files.contains(target)) {
                            found.putIfAbsent("provider", link + " -> " + target);
                        }
                    }
                } catch (IOException | RuntimeException e) {
                    // no such directory, or a dangling link: not the provider
                }
            }
        }
        found.putIfAbsent("libefa", "not mapped");
        found.putIfAbsent("provider", "none (libefa-rdmav*.so not mapped)");
        return found;
    }

    @ParameterizedTest
    @EnumSource(QueuePairType.class)
    @Order(2)
    void receiveLayoutSourceQpAndHowSendersAreNamed(QueuePairType type) {
        EfaRawQp a = qp(type, EfaVerbs.RNR_RETRY_DEVICE_DEFAULT);
        EfaRawQp b = qp(type, EfaVerbs.RNR_RETRY_DEVICE_DEFAULT);
        CreatedAh toB = ahIn(a);
        byte[] sent = payload(64);
        for (int slot = 0; slot < 8; slot++) {
            b.postReceive(slot, SLOT, slot);
        }
        a.send(toB.handle(), b.qpn, sent, 1);
        WorkCompletion sendWc = a.await(a.sendCq, WAIT_MILLIS);
        WorkCompletion first = b.await(b.recvCq, WAIT_MILLIS);
        byte[] head = b.bytes(0, 64);
        EfaHost.figure("%s send completion: %s", type, EfaRawQp.describe(sendWc));
        EfaHost.figure("%s unknown sender (QPN 0x%x): %s; SGID read: %s", type, a.qpn, EfaRawQp.describe(first),
                first != null && first.hasSourceGid ? Gid.of(first.sourceGid) : "none");
        EfaHost.figure("%s first 64 bytes of the receive buffer for a 64-byte payload of 0xa0.. (unwritten bytes 0xee): %s",
                type, HexFormat.of().formatHex(head));

        // The receiver now holds an AH for the sender; slid becomes its AHN, maybe not at once (libfabric PR #11831).
        CreatedAh toA = ahIn(b);
        int datagrams = 0;
        WorkCompletion known = null;
        long start = System.nanoTime();
        while (datagrams < 100 && System.nanoTime() - start < 10_000_000_000L) {
            int slot = 1 + datagrams % 7;
            a.send(toB.handle(), b.qpn, sent, 2 + datagrams);
            a.await(a.sendCq, WAIT_MILLIS);
            known = b.await(b.recvCq, WAIT_MILLIS);
            datagrams++;
            b.postReceive(slot, SLOT, slot);
            if (known == null || known.slid == toA.ahn()) {
                break;
            }
        }
        EfaHost.figure("%s known sender: slid 0x%x after %d datagram(s) in %d ms (the receiver's AHN for it: %d); %s;"
                        + " SGID read: %s", type, known == null ? -1 : known.slid, datagrams,
                (System.nanoTime() - start) / 1_000_000, toA.ahn(), EfaRawQp.describe(known),
                known != null && known.hasSourceGid ? Gid.of(known.sourceGid) : "none (-ENOENT expected)");

        assertNotNull(sendWc, "send completion");
        assertEquals(WorkCompletion.SUCCESS, sendWc.status, EfaRawQp.describe(sendWc));
        assertEquals(0, sendWc.byteLength + sendWc.srcQp + sendWc.slid, "a send completion has no receive fields");
        assertNotNull(first, "receive completion");
        assertEquals(WorkCompletion.SUCCESS, first.status, EfaRawQp.describe(first));
        assertEquals(WorkCompletion.EFA_UNKNOWN_AHN, first.slid, "slid for an unknown sender");
        assertEquals(a.qpn & 0xFFFF, first.srcQp & 0xFFFF, "src_qp");
        assertTrue(first.hasSourceGid, "efadv_wc_read_sgid answered for an unknown sender");
        assertEquals(host.gid, Gid.of(first.sourceGid));
        int at = b.receiveOffset();
        assertArrayEquals(sent, Arrays.copyOfRange(b.bytes(0, at + 64), at, at + 64),
                type + ": the payload at offset " + at);
        assertNotNull(known, "receive completion from the known sender");
        assertEquals(toA.ahn(), known.slid, "slid became the receiver's AHN within 100 datagrams / 10 s");
        assertFalse(known.hasSourceGid, "efadv_wc_read_sgid refuses (ENOENT) when slid names an AH");
    }

    @Test
    @Order(3)
    void srdReceiverNotReadyWithTheDefaultAndAFiniteRnrRetry() {
        EfaDeviceAttributes efa = host.provider.efa().queryDevice(host.context);
        EfaRawQp receiver = qp(QueuePairType.SRD, EfaVerbs.RNR_RETRY_DEVICE_DEFAULT);
        EfaRawQp forever = qp(QueuePairType.SRD, EfaVerbs.RNR_RETRY_DEVICE_DEFAULT);
        CreatedAh ah = ahIn(forever);
        forever.send(ah.handle(), receiver.qpn, payload(64), 1);
        WorkCompletion byDefault = forever.await(forever.sendCq, 3_000);
        EfaHost.figure("SRD RNR, rnr_retry left at the default: after 3 s: %s", EfaRawQp.describe(byDefault));

        WorkCompletion finite = null;
        long millis = -1;
        String refusal = null;
        EfaRawQp bounded = null;
        try {
            bounded = qp(QueuePairType.SRD, 1);
        } catch (VerbsException e) {
            refusal = e.getMessage();
        }
        if (bounded != null) {
            CreatedAh toReceiver = ahIn(bounded);
            long start = System.nanoTime();
            bounded.send(toReceiver.handle(), receiver.qpn, payload(64), 2);
            finite = bounded.await(bounded.sendCq, 30_000);
            millis = (System.nanoTime() - start) / 1_000_000;
        }
        EfaHost.figure("SRD RNR, rnr_retry 1 (device_caps RNR_RETRY %b): %s after %d ms%s", efa.supportsRnrRetry(),
                EfaRawQp.describe(finite), millis, refusal == null ? "" : "; ibv_modify_qp refused it: " + refusal);

        assertNull(byDefault, "rnr_retry 7 retries without end: no completion");
        if (efa.supportsRnrRetry()) {
            assertNull(refusal, "a device with RNR_RETRY takes rnr_retry at RTR to RTS");
            assertNotNull(finite, "a finite rnr_retry ends the send");
            assertEquals(WorkCompletion.RNR_RETRY_EXC_ERR, finite.status, EfaRawQp.describe(finite));
            assertEquals(10, finite.vendorError, "EFA_IO_COMP_STATUS_REMOTE_ERROR_RNR");
        }
    }

    @Test
    @Order(4)
    void aSecondCreateAhForOnePdAndGidBypassingTheCache() {
        long pd = host.provider.allocatePd(host.context);
        AddressHandleAttributes attributes = AddressHandleAttributes.forGid(host.gid);
        CreatedAh first = host.provider.createAh(pd, attributes);
        CreatedAh second = null;
        String refusal = null;
        try {
            second = host.provider.createAh(pd, attributes);
        } catch (VerbsException e) {
            refusal = e.getMessage();
        }
        EfaHost.figure("second ibv_create_ah for one (PD, GID): %s", second != null
                ? "created, AHN " + second.ahn() + " (the first: " + first.ahn() + ")" : "refused: " + refusal);
        EfaHost.figure("efa kernel module AH cache: %s", second != null && second.ahn() == first.ahn()
                ? "present (the second create returned the first AHN)"
                : second != null ? "absent (a second AH with its own AHN)" : "absent (a second AH is refused)");
        host.provider.destroyAh(first.handle());
        if (second != null) {
            host.provider.destroyAh(second.handle());
        }
        CreatedAh again = host.provider.createAh(pd, attributes);
        host.provider.destroyAh(again.handle());
        host.provider.deallocatePd(pd);
        assertTrue(again.ahn() >= 0, "after every AH of the pair is destroyed, the (PD, GID) takes a new one");
    }

    @Test
    @Order(5)
    void aSendWithAnotherPdsAh() {
        EfaRawQp sender = qp(QueuePairType.UD, EfaVerbs.RNR_RETRY_DEVICE_DEFAULT);
        EfaRawQp receiver = qp(QueuePairType.UD, EfaVerbs.RNR_RETRY_DEVICE_DEFAULT);
        receiver.postReceive(0, SLOT, 0);
        CreatedAh foreign = ahIn(receiver);
        String post = "accepted";
        try {
            sender.send(foreign.handle(), receiver.qpn, payload(64), 1);
        } catch (VerbsException e) {
            post = "refused: " + e.getMessage();
        }
        WorkCompletion wc = sender.await(sender.sendCq, WAIT_MILLIS);
        WorkCompletion arrived = receiver.await(receiver.recvCq, 1_000);
        EfaHost.figure("UD send with an AH of another PD: post %s; send completion %s; receiver: %s", post,
                EfaRawQp.describe(wc), EfaRawQp.describe(arrived));
        assertEquals("accepted", post, "libefa copies the AHN unchecked at post");
        assertNotNull(wc, "the device completes it");
        assertNotEquals(WorkCompletion.SUCCESS, wc.status, "the device fails it: " + EfaRawQp.describe(wc));
    }

    /*
     * The probe resets a QP with 4 receives posted (where ERR flushed none). On a device that
     * completes at RESET what was outstanding, those completions are polled after libefa's
     * efa_qp_init_indices rewound its slot pool, and each hands a slot back again: libefa's
     * wrid_idx_pool_next (16 bits) wraps and it writes far past the pool. So the probe runs in a
     * child JVM, whose death is then a figure of the report and not the end of this JVM and of
     * the host report; a death anywhere else, or a failed expectation, fails the test.
     */
    @Test
    @Order(6)
    void aQpForcedToErrorThenReset() throws Exception {
        List<String> command = new ArrayList<>(List.of(Path.of(System.getProperty("java.home"), "bin", "java")
                .toString(), "--enable-native-access=ALL-UNNAMED", "-XX:-CreateCoredumpOnCrash",
                "-XX:ErrorFile=" + Path.of("target", "reset-probe-hs_err_pid%p.log").toAbsolutePath(),
                "-cp", System.getProperty("java.class.path")));
        for (String property : new String[] {"org.bytedeco.javacpp.cachedir", NativeTestSupport.REQUIRE_DEVICE_PROPERTY}) {
            String value = System.getProperty(property);
            if (value != null) {
                command.add("-D" + property + "=" + value);
            }
        }
        command.add(ResetProbe.class.getName());
        Process p = new ProcessBuilder(command).redirectErrorStream(true)
                .redirectInput(ProcessBuilder.Redirect.from(new java.io.File("/dev/null"))).start();
        java.io.ByteArrayOutputStream out = new java.io.ByteArrayOutputStream();
        try (java.io.InputStream in = p.getInputStream()) {
            in.transferTo(out);
        }
        assertTrue(p.waitFor(60, java.util.concurrent.TimeUnit.SECONDS), "the probe's JVM did not end");
        String text = out.toString(java.nio.charset.StandardCharsets.UTF_8);
        text.lines().filter(l -> l.startsWith("FIGURE ")).forEach(System.out::println); // for the report
        if (p.exitValue() == 0) {
            return;
        }
        boolean inTheResets = text.contains(ResetProbe.STEP + " resets") && !text.contains(ResetProbe.STEP + " done");
        assertTrue(p.exitValue() > 128 && inTheResets, "the probe failed (exit " + p.exitValue() + "):\n" + text);
        EfaHost.figure("UD QP reset with 4 receives posted: the probe's JVM died (exit %d, a signal) between the "
                + "resets and their last poll: the device completes at RESET what was outstanding, into slots "
                + "RESET gave back to libefa", p.exitValue());
    }

    /** {@link #aQpForcedToErrorThenReset}'s probe, in a JVM of its own; exits 1 on a failed expectation. */
    static final class ResetProbe {
        static final String STEP = "PROBE STEP";

        public static void main(String[] args) {
            EfaHostFiguresTest t = new EfaHostFiguresTest();
            try {
                t.openEfa();
                try {
                    t.qpForcedToErrorThenReset();
                } finally {
                    t.closeAll();
                }
            } catch (org.opentest4j.TestAbortedException skipped) {
                System.out.println("skipped: " + skipped.getMessage());
            } catch (Throwable e) {
                e.printStackTrace(System.out);
                System.exit(1);
            }
            System.exit(0);
        }
    }

    private void qpForcedToErrorThenReset() {
        EfaRawQp sender = qp(QueuePairType.UD, EfaVerbs.RNR_RETRY_DEVICE_DEFAULT);
        EfaRawQp qp = qp(QueuePairType.UD, EfaVerbs.RNR_RETRY_DEVICE_DEFAULT);
        CreatedAh ah = ahIn(sender);
        for (int slot = 0; slot < 4; slot++) {
            qp.postReceive(slot, SLOT, 1 + slot);
        }
        int rc = NativeVerbs.efa_ah_error_qp(qp.qp);
        int state = host.provider.queryQpState(qp.qp);
        List<WorkCompletion> flushed = qp.drain(qp.recvCq, 8, 2_000);
        String postInError = "accepted";
        try {
            qp.postReceive(4, SLOT, 5);
        } catch (VerbsException e) {
            postInError = "refused: " + e.errno();
        }
        List<WorkCompletion> afterPost = qp.drain(qp.recvCq, 8, 1_000);
        EfaHost.figure("UD QP forced to ERR (rc %d, state %s): %d completions: %s; a receive posted in ERR: %s, then %s",
                rc, QueuePairState.name(state), flushed.size(), describeAll(flushed), postInError, describeAll(afterPost));

        /*
         * Again, polling what ERR flushed before the RESET: libefa maps a completion to its wr_id
         * by slot when polled, and RESET rewinds the slots, so a flushed completion left across
         * it would name a new request and hand its slot back twice. Whether ERR flushes at all
         * is unknown on EFA (FLUSHED is documented "during QP destroy"): both are accepted.
         */
        System.out.println(ResetProbe.STEP + " resets");
        System.out.flush();
        host.provider.resetQp(qp.qp);
        qp.activate(EfaVerbs.RNR_RETRY_DEVICE_DEFAULT);
        for (int slot = 0; slot < 4; slot++) {
            qp.postReceive(slot, SLOT, 11 + slot);
        }
        NativeVerbs.efa_ah_error_qp(qp.qp);
        List<WorkCompletion> flushedAgain = qp.drain(qp.recvCq, 8, 2_000);
        host.provider.resetQp(qp.qp);
        qp.activate(EfaVerbs.RNR_RETRY_DEVICE_DEFAULT);
        for (int slot = 0; slot < 4; slot++) {
            qp.postReceive(slot, SLOT, 21 + slot);
        }
        sender.send(ah.handle(), qp.qpn, payload(64), 1);
        List<WorkCompletion> afterReset = qp.drain(qp.recvCq, 9, 3_000);
        System.out.println(ResetProbe.STEP + " done");
        EfaHost.figure("UD QP forced to ERR again, its %d completions polled, reset, 4 new receives (wr_id 21..24)"
                + " and one datagram: %s", flushedAgain.size(), describeAll(afterReset));

        assertEquals(0, rc);
        assertEquals(QueuePairState.ERR, state);
        assertTrue(flushed.isEmpty() || flushed.size() == 4,
                "ERR flushes every posted receive or none: " + describeAll(flushed));
        for (int i = 0; i < flushed.size(); i++) {
            assertEquals(WorkCompletion.WR_FLUSH_ERR, flushed.get(i).status, EfaRawQp.describe(flushed.get(i)));
            assertEquals(1 + i, flushed.get(i).wrId);
        }
        assertEquals(flushed.size(), flushedAgain.size(), "ERR flushes alike both times");
        assertTrue(afterReset.stream().allMatch(wc -> wc.wrId >= 21 && wc.wrId <= 24),
                "after a drained reset every completion is of a new receive: " + describeAll(afterReset));
        assertTrue(afterReset.stream().anyMatch(wc -> wc.status == WorkCompletion.SUCCESS),
                "the datagram after the reset arrives: " + describeAll(afterReset));
    }

    @ParameterizedTest
    @EnumSource(QueuePairType.class)
    @Order(7)
    void zeroLengthAndOversizedReceives(QueuePairType type) {
        EfaRawQp sender = qp(type, EfaVerbs.RNR_RETRY_DEVICE_DEFAULT);
        EfaRawQp receiver = qp(type, EfaVerbs.RNR_RETRY_DEVICE_DEFAULT);
        CreatedAh ah = ahIn(sender);
        String zero;
        try {
            receiver.postReceive(0, 0, 1);
            zero = "accepted";
        } catch (IllegalArgumentException e) {
            zero = "refused before native code: " + e.getMessage();
        }
        int stub = NativeVerbs.efa_ah_post_recv(receiver.qp, receiver.mr, 0, 0, 1);
        int small = receiver.receiveOffset() + 512;
        receiver.postReceive(0, small, 2);
        sender.send(ah.handle(), receiver.qpn, payload(1024), 3);
        WorkCompletion sendWc = sender.await(sender.sendCq, WAIT_MILLIS);
        WorkCompletion recvWc = receiver.await(receiver.recvCq, WAIT_MILLIS);
        int state = host.provider.queryQpState(receiver.qp);
        EfaHost.figure("%s zero-length receive: %s; the stub answers %d", type, zero, stub);
        EfaHost.figure("%s 1024 bytes into a %d-byte receive: sender %s; receiver %s; receiver QP then %s", type, small,
                EfaRawQp.describe(sendWc), EfaRawQp.describe(recvWc), QueuePairState.name(state));
        assertEquals(-22, stub, "EINVAL");
        assertTrue(recvWc == null || recvWc.status != WorkCompletion.SUCCESS || recvWc.byteLength <= small,
                "no receive reports more bytes than its buffer: " + EfaRawQp.describe(recvWc));
    }

    @ParameterizedTest
    @EnumSource(QueuePairType.class)
    @Order(8)
    void aDatagramOfMaxMsgSz(QueuePairType type) {
        long maxMsgSz = host.provider.queryPort(host.context, 1).maxMessageSize();
        int size = (int) Math.min(maxMsgSz, 1 << 20);
        EfaRawQp sender = qp(type, EfaVerbs.RNR_RETRY_DEVICE_DEFAULT, size + 40);
        EfaRawQp receiver = qp(type, EfaVerbs.RNR_RETRY_DEVICE_DEFAULT, size + 40);
        CreatedAh ah = ahIn(sender);
        byte[] sent = payload(size);
        receiver.postReceive(0, receiver.receiveOffset() + size, 1);
        sender.send(ah.handle(), receiver.qpn, sent, 2);
        WorkCompletion sendWc = sender.await(sender.sendCq, WAIT_MILLIS);
        WorkCompletion recvWc = receiver.await(receiver.recvCq, WAIT_MILLIS);
        EfaHost.figure("%s datagram of max_msg_sz (%d bytes): sender %s; receiver %s", type, maxMsgSz,
                EfaRawQp.describe(sendWc), EfaRawQp.describe(recvWc));
        assertNotNull(recvWc);
        assertEquals(WorkCompletion.SUCCESS, recvWc.status, EfaRawQp.describe(recvWc));
        int at = receiver.receiveOffset();
        assertArrayEquals(sent, Arrays.copyOfRange(receiver.bytes(0, at + size), at, at + size));
    }

    private static String describeAll(List<WorkCompletion> wcs) {
        List<String> out = new ArrayList<>();
        for (WorkCompletion wc : wcs) {
            out.add("[" + EfaRawQp.describe(wc) + "]");
        }
        return out.isEmpty() ? "none" : String.join(" ", out);
    }
}
