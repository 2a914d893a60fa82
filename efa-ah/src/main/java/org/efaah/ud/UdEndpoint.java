package org.efaah.ud;

import java.nio.ByteBuffer;
import java.util.Objects;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.locks.LockSupport;
import org.efaah.cache.AddressHandle;
import org.efaah.cache.AddressHandleCache;
import org.efaah.verbs.AddressHandleAttributes;
import org.efaah.verbs.CompletionQueue;
import org.efaah.verbs.Device;
import org.efaah.verbs.Errno;
import org.efaah.verbs.Gid;
import org.efaah.verbs.MemoryRegion;
import org.efaah.verbs.ProtectionDomain;
import org.efaah.verbs.Ranges;
import org.efaah.verbs.UdQueuePair;
import org.efaah.verbs.VerbsException;
import org.efaah.verbs.WorkCompletion;

/**
 * A UD endpoint: a UD QP with its completion queues and registered send and receive buffers,
 * that sends through AHs from an {@link AddressHandleCache} and answers senders through
 * return-path AHs from the same cache.
 *
 * <p>A send copies the payload into a registered slot and posts it. The AH stays alive until the
 * send completes, even if the caller closes its handle at once: the endpoint holds a reference of
 * its own ({@link AddressHandle#duplicate()}) until the completion. A send that completes with an
 * error is reported by the next {@link #send} or {@link #flush} as a {@link WorkCompletionException}.
 *
 * <p>Receives are posted at open, one slot each of 40 bytes (the GRH every UD receive carries)
 * plus the largest message, and reposted as soon as a datagram has been copied out.
 *
 * <p>Thread-safe: sends are serialised with each other, receives with each other; a send and a
 * receive may run at once. {@link #close()} is idempotent.
 */
public final class UdEndpoint implements AutoCloseable {
    /** Bytes of the Global Routing Header in front of every UD receive. */
    public static final int GRH_BYTES = 40;
    /** The Q_Key used when none is given (the one {@code ibv_ud_pingpong} uses). */
    public static final long DEFAULT_QKEY = 0x11111111L;
    private static final long SEND_SLOT_TIMEOUT_NANOS = TimeUnit.SECONDS.toNanos(10);

    private final ProtectionDomain pd;
    private final AddressHandleCache cache;
    private final Device device;
    private final Options options;
    private final int maxMessageSize;
    private final int receiveSlotSize;
    private final CompletionQueue sendCq;
    private final CompletionQueue receiveCq;
    private final MemoryRegion sendMemory;
    private final MemoryRegion receiveMemory;
    private final UdQueuePair qp;
    private final EndpointAddress address;

    private final Object sendLock = new Object();
    private final AddressHandle[] inFlight;
    private final int[] freeSlots;
    private int freeCount;
    private final WorkCompletion[] sendCompletions;
    private WorkCompletionException sendError;

    private final Object receiveLock = new Object();
    private final WorkCompletion[] receiveCompletion = {new WorkCompletion()};
    private final int scratchOffset;
    private volatile boolean closed;

    /**
     * Settings of an endpoint.
     *
     * @param portNum        1-based port
     * @param sgidIndex      index of this endpoint's own GID in the port's table (its address)
     * @param qkey           Q_Key, 0..0x7FFFFFFF
     * @param sendDepth      sends in flight at most, 1..8192
     * @param receiveDepth   receives posted, 1..8192
     * @param maxMessageSize largest payload in bytes, 1..path MTU; 0 means the port's active MTU
     */
    public record Options(int portNum, int sgidIndex, long qkey, int sendDepth, int receiveDepth, int maxMessageSize) {
        public static Options defaults() {
            return new Options(1, 0, DEFAULT_QKEY, 64, 256, 0);
        }

        public Options withSgidIndex(int index) {
            return new Options(portNum, index, qkey, sendDepth, receiveDepth, maxMessageSize);
        }

        public Options withQkey(long key) {
            return new Options(portNum, sgidIndex, key, sendDepth, receiveDepth, maxMessageSize);
        }

        public Options withDepths(int send, int receive) {
            return new Options(portNum, sgidIndex, qkey, send, receive, maxMessageSize);
        }

        public Options withMaxMessageSize(int bytes) {
            return new Options(portNum, sgidIndex, qkey, sendDepth, receiveDepth, bytes);
        }
    }

    private UdEndpoint(ProtectionDomain pd, AddressHandleCache cache, Options options, int maxMessageSize) {
        this.pd = pd;
        this.cache = cache;
        this.device = pd.device();
        this.options = options;
        this.maxMessageSize = maxMessageSize;
        this.receiveSlotSize = GRH_BYTES + maxMessageSize;
        this.inFlight = new AddressHandle[options.sendDepth()];
        this.freeSlots = new int[options.sendDepth()];
        for (int i = 0; i < freeSlots.length; i++) {
            freeSlots[i] = i;
        }
        this.freeCount = freeSlots.length;
        this.sendCompletions = new WorkCompletion[Math.min(16, options.sendDepth())];
        for (int i = 0; i < sendCompletions.length; i++) {
            sendCompletions[i] = new WorkCompletion();
        }
        this.scratchOffset = options.receiveDepth() * receiveSlotSize;
        Gid gid = device.gid(options.portNum(), options.sgidIndex());
        CompletionQueue scq = null;
        CompletionQueue rcq = null;
        MemoryRegion smr = null;
        MemoryRegion rmr = null;
        UdQueuePair q = null;
        try {
            scq = device.createCq(options.sendDepth());
            rcq = device.createCq(options.receiveDepth());
            smr = pd.registerMemory(ByteBuffer.allocateDirect(options.sendDepth() * maxMessageSize));
            // One slot more than the receive depth: scratch space for a GRH handed to ibv_init_ah_from_wc.
            rmr = pd.registerMemory(ByteBuffer.allocateDirect((options.receiveDepth() + 1) * receiveSlotSize));
            q = pd.createUdQp(scq, rcq, options.sendDepth(), options.receiveDepth());
            q.activate(options.portNum(), 0, options.qkey());
            for (int i = 0; i < options.receiveDepth(); i++) {
                q.postReceive(rmr, i * receiveSlotSize, receiveSlotSize, i);
            }
        } catch (RuntimeException e) {
            closeAll(e, q, rmr, smr, rcq, scq);
            throw e;
        }
        this.sendCq = scq;
        this.receiveCq = rcq;
        this.sendMemory = smr;
        this.receiveMemory = rmr;
        this.qp = q;
        this.address = new EndpointAddress(gid, q.qpn(), options.qkey());
    }

    /**
     * Opens an endpoint on {@code pd}'s device.
     *
     * @throws NullPointerException          if an argument is null
     * @throws IllegalArgumentException      if an option is out of range (named, with the range)
     * @throws UnsupportedOperationException if the provider has no datagram path
     * @throws VerbsException                if the device refuses a resource
     */
    public static UdEndpoint open(ProtectionDomain pd, AddressHandleCache cache, Options options) {
        Objects.requireNonNull(pd, "pd");
        Objects.requireNonNull(cache, "cache");
        Objects.requireNonNull(options, "options");
        Device device = pd.device();
        int ports = device.attributes().portCount();
        Ranges.check("portNum", options.portNum(), 1, ports);
        Ranges.check("sendDepth", options.sendDepth(), 1, 8192);
        Ranges.check("receiveDepth", options.receiveDepth(), 1, 8192);
        Ranges.check("qkey", options.qkey(), 0, UdQueuePair.MAX_QKEY);
        int mtu = device.port(options.portNum()).activeMtu();
        Ranges.check("maxMessageSize", options.maxMessageSize(), 0, mtu);
        return new UdEndpoint(pd, cache, options, options.maxMessageSize() == 0 ? mtu : options.maxMessageSize());
    }

    /** Where peers send to reach this endpoint. */
    public EndpointAddress address() {
        return address;
    }

    /** Largest payload {@link #send} accepts, bytes. */
    public int maxMessageSize() {
        return maxMessageSize;
    }

    public ProtectionDomain pd() {
        return pd;
    }

    /** Sends {@code payload}'s remaining bytes to {@code to} through {@code ah}; see {@link #send(AddressHandle, int, long, ByteBuffer)}. */
    public void send(AddressHandle ah, EndpointAddress to, ByteBuffer payload) {
        Objects.requireNonNull(to, "to");
        send(ah, to.qpn(), to.qkey(), payload);
    }

    /**
     * Posts one {@code IBV_WR_SEND} of {@code payload}'s remaining bytes (consumed) to
     * ({@code ah}, {@code remoteQpn}, {@code remoteQkey}). Returns once posted; the AH is kept
     * alive until the send completes, whatever the caller does with {@code ah}. Waits for a free
     * send slot when {@code sendDepth} sends are in flight.
     *
     * @throws IllegalArgumentException if {@code ah} belongs to another PD, the payload is larger
     *                                  than {@link #maxMessageSize()}, or a number is out of range
     * @throws IllegalStateException    if the endpoint or {@code ah} is closed
     * @throws WorkCompletionException  if an earlier send completed with an error
     * @throws VerbsException           if the post fails, or ETIMEDOUT when no slot frees in 10 s
     */
    public void send(AddressHandle ah, int remoteQpn, long remoteQkey, ByteBuffer payload) {
        Objects.requireNonNull(ah, "ah");
        Objects.requireNonNull(payload, "payload");
        if (ah.pd() != pd) {
            throw new IllegalArgumentException("ah: belongs to another PD than this endpoint's");
        }
        int length = payload.remaining();
        if (length > maxMessageSize) {
            throw new IllegalArgumentException("payload: " + length + " bytes; valid 0.." + maxMessageSize
                    + " (the endpoint's largest message)");
        }
        Ranges.check("remoteQpn", remoteQpn, 0, 0xFFFFFF);
        Ranges.check("remoteQkey", remoteQkey, 0, UdQueuePair.MAX_QKEY);
        synchronized (sendLock) {
            checkOpen();
            throwSendError();
            int slot = takeSlot();
            AddressHandle held;
            try {
                held = ah.duplicate();
            } catch (RuntimeException e) {
                freeSlots[freeCount++] = slot;
                throw e;
            }
            int offset = slot * maxMessageSize;
            sendMemory.buffer().put(offset, payload, payload.position(), length);
            try {
                qp.postSend(held.hardware(), remoteQpn, remoteQkey, sendMemory, offset, length, slot);
            } catch (RuntimeException e) {
                held.close();
                freeSlots[freeCount++] = slot;
                throw e;
            }
            inFlight[slot] = held;
            payload.position(payload.position() + length);
        }
    }

    private int takeSlot() {
        long deadline = 0;
        while (freeCount == 0) {
            if (pollSends() == 0) {
                if (deadline == 0) {
                    deadline = System.nanoTime() + SEND_SLOT_TIMEOUT_NANOS;
                } else if (System.nanoTime() > deadline) {
                    throw new VerbsException("ibv_poll_cq", Errno.ETIMEDOUT, "no send completed in 10 s");
                }
                Thread.onSpinWait();
            }
            throwSendError();
        }
        return freeSlots[--freeCount];
    }

    /** Reaps send completions: frees their slots and drops the endpoint's AH references. */
    private int pollSends() {
        int n = sendCq.poll(sendCompletions);
        for (int i = 0; i < n; i++) {
            WorkCompletion wc = sendCompletions[i];
            int slot = (int) wc.wrId;
            AddressHandle held = inFlight[slot];
            inFlight[slot] = null;
            if (held != null) {
                held.close();
            }
            freeSlots[freeCount++] = slot;
            if (wc.status != WorkCompletion.SUCCESS && sendError == null) {
                sendError = new WorkCompletionException("send", wc.status, wc.vendorError);
            }
        }
        return n;
    }

    private void throwSendError() {
        WorkCompletionException e = sendError;
        if (e != null) {
            sendError = null;
            throw e;
        }
    }

    /**
     * Waits until every send posted so far has completed.
     *
     * @return true when all completed, false on timeout
     * @throws WorkCompletionException if one completed with an error
     */
    public boolean flush(long timeout, TimeUnit unit) {
        long deadline = System.nanoTime() + unit.toNanos(timeout);
        synchronized (sendLock) {
            checkOpen();
            while (freeCount < freeSlots.length) {
                if (pollSends() == 0) {
                    if (System.nanoTime() > deadline) {
                        return false;
                    }
                    Thread.onSpinWait();
                }
            }
            throwSendError();
            return true;
        }
    }

    /** Sends in flight now (posted, not yet completed as far as this endpoint has polled). */
    public int sendsInFlight() {
        synchronized (sendLock) {
            return freeSlots.length - freeCount;
        }
    }

    /**
     * Waits up to {@code timeout} for one datagram.
     *
     * @return the datagram, or null on timeout
     * @throws WorkCompletionException if the receive completed with an error (the slot is reposted)
     * @throws IllegalStateException   if the endpoint is closed
     */
    public Datagram receive(long timeout, TimeUnit unit) {
        long deadline = System.nanoTime() + unit.toNanos(timeout);
        int idle = 0;
        synchronized (receiveLock) {
            for (;;) {
                checkOpen();
                if (receiveCq.poll(receiveCompletion) == 1) {
                    return take(receiveCompletion[0]);
                }
                if (System.nanoTime() - deadline > 0) {
                    return null;
                }
                // Spin first for latency, then back off so an idle receiver does not burn a core.
                if (++idle < 10_000) {
                    Thread.onSpinWait();
                } else {
                    LockSupport.parkNanos(20_000);
                }
            }
        }
    }

    private Datagram take(WorkCompletion wc) {
        int slot = (int) wc.wrId;
        int offset = slot * receiveSlotSize;
        try {
            if (wc.status != WorkCompletion.SUCCESS) {
                throw new WorkCompletionException("receive", wc.status, wc.vendorError);
            }
            ByteBuffer buffer = receiveMemory.buffer();
            byte[] grh = new byte[GRH_BYTES];
            buffer.get(offset, grh);
            byte[] payload = new byte[Math.max(0, wc.byteLength - GRH_BYTES)];
            buffer.get(offset + GRH_BYTES, payload);
            WorkCompletion copy = new WorkCompletion();
            copy.wrId = wc.wrId;
            copy.status = wc.status;
            copy.opcode = wc.opcode;
            copy.byteLength = wc.byteLength;
            copy.qpNum = wc.qpNum;
            copy.srcQp = wc.srcQp;
            copy.wcFlags = wc.wcFlags;
            copy.pkeyIndex = wc.pkeyIndex;
            copy.slid = wc.slid;
            copy.sl = wc.sl;
            copy.dlidPathBits = wc.dlidPathBits;
            return new Datagram(payload, wc.srcQp, sourceGid(grh), grh, copy);
        } finally {
            qp.postReceive(receiveMemory, offset, receiveSlotSize, slot);
        }
    }

    /** Where the IPv4 header starts in the GRH area of a RoCE v2 datagram that came over IPv4. */
    private static final int IPV4_HEADER_OFFSET = 20;
    private static final int IPV4_HEADER_BYTES = 20;
    private static final int IPV4_SOURCE_OFFSET = 12;
    private static final int IPV6_SOURCE_OFFSET = 8;

    /**
     * The sender's GID from the 40 bytes in front of a UD receive. On InfiniBand, EFA and RoCE
     * over IPv6 they are an IPv6-layout GRH with the source GID at bytes 8..23. On RoCE v2 over
     * IPv4 the device writes the 20-byte IPv4 header into the last 20 bytes and leaves the first
     * 20 undefined (zero on rxe, stale data on others); the sender is then the IPv4-mapped GID of
     * the IPv4 source address. Told apart as {@code ibv_init_ah_from_wc} does, so that the source
     * reported and the return-path AH always agree: not an IPv6 version nibble and an IPv4
     * version at byte 20 means IPv4; an IPv6 nibble means IPv6 unless bytes 20..39 are a whole
     * IPv4 header (IHL 5) with a valid checksum.
     */
    static Gid sourceGid(byte[] grh) {
        byte[] gid = new byte[Gid.LENGTH];
        if (isIpv4(grh)) {
            gid[10] = (byte) 0xFF;
            gid[11] = (byte) 0xFF;
            System.arraycopy(grh, IPV4_HEADER_OFFSET + IPV4_SOURCE_OFFSET, gid, 12, 4);
        } else {
            System.arraycopy(grh, IPV6_SOURCE_OFFSET, gid, 0, Gid.LENGTH);
        }
        return Gid.of(gid);
    }

    private static boolean isIpv4(byte[] grh) {
        int ipv4First = grh[IPV4_HEADER_OFFSET] & 0xFF;
        if ((grh[0] & 0xF0) != 0x60) {
            return (ipv4First >>> 4) == 4;
        }
        // Version and IHL (4, 5), then a checksum that holds: a stale IPv6 header in front is ignored.
        return ipv4First == 0x45 && ipv4ChecksumHolds(grh, IPV4_HEADER_OFFSET);
    }

    /** RFC 791: the ones'-complement sum of the header's 16-bit words, checksum included, is 0xFFFF. */
    private static boolean ipv4ChecksumHolds(byte[] b, int offset) {
        int sum = 0;
        for (int i = offset; i < offset + IPV4_HEADER_BYTES; i += 2) {
            sum += ((b[i] & 0xFF) << 8) | (b[i + 1] & 0xFF);
        }
        while ((sum >>> 16) != 0) {
            sum = (sum & 0xFFFF) + (sum >>> 16);
        }
        return sum == 0xFFFF;
    }

    /**
     * The attributes of an AH back to the sender of {@code datagram} ({@code ibv_init_ah_from_wc(3)}).
     */
    public AddressHandleAttributes replyAttributes(Datagram datagram) {
        Objects.requireNonNull(datagram, "datagram");
        synchronized (receiveLock) {
            checkOpen();
            receiveMemory.buffer().put(scratchOffset, datagram.grh());
            return device.initAhFromWc(options.portNum(), datagram.completion(), receiveMemory, scratchOffset);
        }
    }

    /**
     * Acquires, through the cache, the AH back to the sender of {@code datagram}: a server
     * answering many clients holds one hardware AH per client, not one per message.
     */
    public AddressHandle acquireReplyAh(Datagram datagram) {
        return cache.acquire(pd, replyAttributes(datagram));
    }

    /** Replies to the sender of {@code datagram} with {@code payload}, through a return-path AH. */
    public void reply(Datagram datagram, ByteBuffer payload) {
        try (AddressHandle ah = acquireReplyAh(datagram)) {
            send(ah, datagram.sourceQpn(), options.qkey(), payload);
        }
    }

    private void checkOpen() {
        if (closed) {
            throw new IllegalStateException("UD endpoint is closed");
        }
    }

    /**
     * Waits briefly (up to 1 s) for sends in flight, then destroys the QP, the registered memory
     * and the CQs, children first, and drops the AH references it held. Idempotent.
     */
    @Override
    public void close() {
        synchronized (sendLock) {
            synchronized (receiveLock) {
                if (closed) {
                    return;
                }
                long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(1);
                while (freeCount < freeSlots.length && System.nanoTime() < deadline) {
                    if (pollSends() == 0) {
                        Thread.onSpinWait();
                    }
                }
                closed = true;
                RuntimeException failure = null;
                failure = closeAll(failure, qp);
                // With the QP gone no send can still use an AH: now the references may go. If the
                // QP could not be destroyed they stay held (and show as leaks at cache close)
                // rather than let an AH be destroyed under a send the device may still process.
                for (int i = 0; failure == null && i < inFlight.length; i++) {
                    if (inFlight[i] != null) {
                        inFlight[i].close();
                        inFlight[i] = null;
                    }
                }
                failure = closeAll(failure, receiveMemory, sendMemory, receiveCq, sendCq);
                if (failure != null) {
                    throw failure;
                }
            }
        }
    }

    private static RuntimeException closeAll(RuntimeException failure, AutoCloseable... resources) {
        for (AutoCloseable r : resources) {
            if (r == null) {
                continue;
            }
            try {
                r.close();
            } catch (RuntimeException e) {
                if (failure == null) {
                    failure = e;
                } else {
                    failure.addSuppressed(e);
                }
            } catch (Exception e) {
                throw new IllegalStateException(e);
            }
        }
        return failure;
    }

    @Override
    public String toString() {
        return "UdEndpoint[" + address + " on " + device.name() + "]";
    }
}
