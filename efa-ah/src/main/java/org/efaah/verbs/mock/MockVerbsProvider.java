package org.efaah.verbs.mock;

import org.efaah.verbs.spi.AsyncEventVerbs;
import org.efaah.verbs.spi.CompletionChannelVerbs;
import org.efaah.verbs.spi.DatagramVerbs;
import org.efaah.verbs.spi.NetworkVerbs;
import java.util.ArrayList;
import java.util.BitSet;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.SplittableRandom;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.locks.LockSupport;
import org.efaah.verbs.AddressHandleAttributes;
import org.efaah.verbs.spi.CreatedAh;
import org.efaah.verbs.DeviceAttributes;
import org.efaah.verbs.Errno;
import org.efaah.verbs.Gid;
import org.efaah.verbs.PortAttributes;
import org.efaah.internal.Ranges;
import org.efaah.verbs.VerbsException;
import org.efaah.verbs.spi.VerbsProvider;

/**
 * A {@link VerbsProvider} that behaves like a current EFA host (new-generation hardware under a
 * kernel with the EFA driver's AH cache, by default), for machines with no RDMA device (laptops, CI)
 * and for tests that need faults on demand.
 *
 * <p>Devices are named {@code efa_0}, {@code efa_1}, ...: vendor id 0x1d0f, one port, link layer
 * unspecified, {@code max_ah} from the configuration. AH numbers (AHNs) are 16-bit, unique among
 * the live AHs of a device and reused after destroy (lowest free first). A create beyond
 * {@code max_ah} fails with ENOMEM; destroying an unknown or destroyed AH fails with EINVAL;
 * deallocating a PD that still has AHs fails with EBUSY. What a duplicate (PD, GID) create does
 * is the {@link DuplicatePolicy}. Like the EFA driver, the mock requires a global AH (a GRH with
 * a dgid) and uses no other field to tell destinations apart.
 *
 * <p>With {@link MockConfig#efa()} false the devices model a RoCE NIC instead ({@code roce_N}):
 * no AHN, and AHs told apart by every {@code ibv_ah_attr} field; each sits on a netdev of the
 * {@link #network() mock network}, whose neighbour table an AH resolves its MAC from at create,
 * and whose changes reach the network channels as rtnetlink's reach the native provider's.
 *
 * <p>As strict as the kernel where the kernel is strict: an AH without a GRH fails with EINVAL
 * (EFA and RoCE both need one), an sgid_index whose GID slot is empty ({@code ::} in
 * {@link MockConfig#gids()}) with ENODATA, a PD beyond {@link MockConfig#maxPd()} with ENOMEM.
 * GID slots have types ({@link MockConfig#gidTypes()}, read with {@link #queryGidType}), and
 * {@link #raiseEvent} delivers asynchronous events to every open context of a device.
 *
 * <p>Closing a context always succeeds and frees everything made in it, as
 * {@code ibv_close_device(3)} does: its PDs, AHs, CQs, memory regions and QPs are gone, and any
 * later call naming one of them fails with EINVAL, as an unknown handle does.
 *
 * <p>Thread-safe. Faults can be injected at any time with {@link #failNextCreates} and
 * {@link #failNextDestroys}, or at random through {@link MockConfig#failureProbability()} and
 * {@link #injectRandomFaults}.
 */
public final class MockVerbsProvider 
        implements VerbsProvider, DatagramVerbs, CompletionChannelVerbs, AsyncEventVerbs, NetworkVerbs {
    private final MockConfig config;
    private final List<MockDevice> devices = new ArrayList<>();
    private final Map<Long, MockContext> contexts = new ConcurrentHashMap<>();
    private final Map<Long, MockPd> pds = new ConcurrentHashMap<>();
    private final Map<Long, MockAh> ahs = new ConcurrentHashMap<>();
    private final AtomicLong nextHandle = new AtomicLong(0x1000);
    private final MockFabric fabric = new MockFabric(this);
    /* The async-event channels, one per context that opened one (ibv_close_device frees the async fd: its channel goes with it). */
    private final MockChannels<org.efaah.verbs.spi.AsyncEvent> events = new MockChannels<>(this, "event");
    private final MockNetwork network;

    private final AtomicLong createCalls = new AtomicLong();
    private final AtomicLong destroyCalls = new AtomicLong();
    private final AtomicLong hardwareCreates = new AtomicLong();
    private final AtomicLong hardwareDestroys = new AtomicLong();
    private final AtomicLong liveAhs = new AtomicLong();
    private final AtomicLong peakLiveAhs = new AtomicLong();
    private final AtomicLong duplicatesRefused = new AtomicLong();
    private final AtomicLong kernelCacheHits = new AtomicLong();
    private final AtomicLong duplicatesCreated = new AtomicLong();
    private final AtomicLong injectedFailures = new AtomicLong();

    private final AtomicInteger createFaults = new AtomicInteger();
    private volatile Errno createFaultErrno = Errno.ENOMEM;
    private final AtomicInteger destroyFaults = new AtomicInteger();
    private volatile Errno destroyFaultErrno = Errno.EINVAL;
    private final SplittableRandom random;
    private volatile RandomFaults randomFaults = RandomFaults.NONE;
    private SplittableRandom faultRandom = new SplittableRandom(0); // guarded by this

    /**
     * A provider with {@link MockConfig#defaults()}: one EFA device, one GID, no latency, no
     * faults. This is the constructor {@link java.util.ServiceLoader} uses.
     */
    public MockVerbsProvider() {
        this(MockConfig.defaults());
    }

    /**
     * A provider whose devices are made as {@code config} says; they exist from now on and are
     * never removed.
     *
     * @param config the devices, their limits, latency and faults
     * @throws NullPointerException if {@code config} is null
     */
    public MockVerbsProvider(MockConfig config) {
        this.config = Objects.requireNonNull(config, "config");
        this.random = new SplittableRandom(config.seed());
        for (int i = 0; i < config.deviceCount(); i++) {
            devices.add(new MockDevice(i, config));
        }
        this.network = new MockNetwork(this, config.deviceCount());
    }

    /**
     * The host network under the RoCE devices: netdevs and a neighbour table tests change, whose
     * changes reach the {@link #openNetworkChanges() network channels}.
     *
     * @return this provider's network
     */
    public MockNetwork network() {
        return network;
    }

    /**
     * The configuration this provider was made with.
     *
     * @return the configuration, immutable
     */
    public MockConfig config() {
        return config;
    }

    @Override
    public String name() {
        return "mock";
    }

    @Override
    public List<String> deviceNames() {
        return devices.stream().map(d -> d.name).toList();
    }

    @Override
    public long openDevice(String name) {
        for (MockDevice d : devices) {
            if (d.name.equals(name)) {
                long h = nextHandle.getAndIncrement();
                contexts.put(h, new MockContext(d));
                return h;
            }
        }
        throw new VerbsException("ibv_open_device", Errno.ENODEV, name);
    }

    @Override
    public void closeDevice(long context) {
        MockContext c = context(context, "ibv_close_device");
        contexts.remove(context);
        MockDevice d = c.device;
        synchronized (d) {
            for (Map.Entry<Long, MockAh> e : new ArrayList<>(ahs.entrySet())) {
                if (e.getValue().pd().context == c) {
                    ahs.remove(e.getKey());
                    network.forget(e.getKey());
                    release(d, e.getValue());
                }
            }
            int before = pds.size();
            pds.values().removeIf(p -> p.context == c);
            d.livePds -= before - pds.size();
        }
        fabric.closeContext(c);
        events.closeIf(owner -> owner == context);
    }

    @Override
    public DeviceAttributes queryDevice(long context) {
        MockDevice d = context(context, "ibv_query_device").device;
        return MockAttributes.device(d.name, d.gids[0], config);
    }

    @Override
    public PortAttributes queryPort(long context, int portNum) {
        MockDevice device = context(context, "ibv_query_port").device();
        if (portNum != 1) {
            throw new VerbsException("ibv_query_port", Errno.EINVAL, "port " + portNum);
        }
        return MockAttributes.port(device.portState, config);
    }

    @Override
    public Gid queryGid(long context, int portNum, int index) {
        MockDevice d = context(context, "ibv_query_gid").device;
        if (portNum != 1 || index < 0 || index >= d.gids.length) {
            throw new VerbsException("ibv_query_gid", Errno.EINVAL, "port " + portNum + " index " + index);
        }
        return d.gids[index];
    }

    /**
     * The type of a GID slot ({@code ibv_query_gid_ex}), from {@link MockConfig#gidType(int)};
     * ENODATA for an empty slot, as the kernel answers.
     */
    @Override
    public org.efaah.verbs.GidType queryGidType(long context, int portNum, int index) {
        MockDevice d = context(context, "ibv_query_gid_ex").device;
        checkQueryGidEx();
        if (portNum != 1 || index < 0 || index >= d.gids.length) {
            throw new VerbsException("ibv_query_gid_ex", Errno.EINVAL, "port " + portNum + " index " + index);
        }
        if (d.gids[index].isZero()) {
            throw new VerbsException("ibv_query_gid_ex", Errno.ENODATA, "GID slot " + index + " is empty");
        }
        return config.gidType(index);
    }

    /** {@code ibv_alloc_pd}: ENOMEM beyond {@code max_pd} live PDs on the device, as the kernel answers. */
    @Override
    public long allocatePd(long context) {
        MockContext c = context(context, "ibv_alloc_pd");
        long h = nextHandle.getAndIncrement();
        synchronized (c.device) {
            if (c.device.livePds >= config.maxPd()) {
                throw new VerbsException("ibv_alloc_pd", Errno.ENOMEM, "max_pd " + config.maxPd() + " reached");
            }
            c.device.livePds++;
            pds.put(h, new MockPd(h, c));
        }
        c.pdCount.incrementAndGet();
        return h;
    }

    @Override
    public void deallocatePd(long pd) {
        MockPd p = pds.get(pd);
        if (p == null) {
            throw new VerbsException("ibv_dealloc_pd", Errno.EINVAL, "unknown PD");
        }
        synchronized (p.context.device) {
            if (p.ahCount > 0 || p.resources.get() > 0) {
                throw new VerbsException("ibv_dealloc_pd", Errno.EBUSY,
                        p.ahCount + " AH(s) and " + p.resources.get() + " QP(s)/MR(s) still exist");
            }
            pds.remove(pd);
            p.context.device.livePds--;
        }
        p.context.pdCount.decrementAndGet();
    }

    /*
     * The kernel-cached policy follows the EFA driver's AH cache, efa_create_ah and efa_destroy_ah
     * in the kernel's drivers/infiniband/hw/efa/efa_verbs.c as of Linux 7.3 (rdma for-next
     * 97ba15272e8e and 234895fa8be0; the out-of-tree EFA driver 3.3). That source could not be read
     * here (the code search holds no copy and the kernel tree is too large to fetch), so the rules are
     * those the commits state, recorded in efa-datapath.md, row "duplicate (PD, GID)": a create finds
     * (PD, GID) in the cache and returns its AHN with one more user, no device command; a destroy
     * drops a user and sends the device's destroy command only for the last; a failed device destroy
     * leaves the entry cached, so later creates get its AHN without a command. One cache per PD.
     * Every call still enters the kernel: systemCallNanos, on every policy.
     */
    @Override
    public CreatedAh createAh(long pd, AddressHandleAttributes attributes) {
        createCalls.incrementAndGet();
        systemCall();
        MockPd p = pds.get(pd);
        if (p == null) {
            throw new VerbsException("ibv_create_ah", Errno.EINVAL, "unknown PD");
        }
        // Like a kernel, only a global AH's GRH (sgid_index among it) is looked at; EFA and RoCE
        // both require one (RoCE frames carry the GRH or the IP header made from it).
        if (attributes.portNum() != 1 || !attributes.isGlobal()
                || attributes.sgidIndex() >= config.gidTableLength()) {
            throw new VerbsException("ibv_create_ah", Errno.EINVAL, attributes.toString());
        }
        if (p.context.device.gids[attributes.sgidIndex()].isZero()) {
            throw new VerbsException("ibv_create_ah", Errno.ENODATA, "sgid_index " + attributes.sgidIndex()
                    + ": the GID slot is empty");
        }
        MockDevice d = p.context.device;
        Gid gid = attributes.dgid();
        // EFA tells destinations apart by GID alone; other devices by the whole ibv_ah_attr.
        DestinationKey key = new DestinationKey(pd, config.efa() ? gid : attributes);
        if (config.duplicatePolicy() == DuplicatePolicy.KERNEL_CACHED) {
            synchronized (d) {
                HardwareAh cached = d.byDestination.get(key);
                if (cached != null && pds.containsKey(pd)) {
                    return kernelCacheHit(d, p, cached, attributes); // no device command, so no device fault
                }
            }
        }
        // A failing hardware command takes as long as a good one (an ETIME is a timeout, after all).
        if (config.createLatencyNanos() > 0) {
            command(d, config.createLatencyNanos());
        }
        injectCreateFault(attributes);
        synchronized (d) {
            if (!pds.containsKey(pd)) {
                throw new VerbsException("ibv_create_ah", Errno.EINVAL, "PD deallocated");
            }
            HardwareAh existing = d.byDestination.get(key);
            if (existing != null && config.duplicatePolicy() == DuplicatePolicy.STRICT) {
                duplicatesRefused.incrementAndGet();
                throw new VerbsException("ibv_create_ah", config.duplicateErrno(),
                        "device already holds AHN " + existing.ahn + " for " + gid + " in this PD");
            } else if (existing != null && config.duplicatePolicy() == DuplicatePolicy.KERNEL_CACHED) {
                // Another create of this (PD, GID) got in while this one waited: the kernel's cache
                // mutex would have made this one wait for it and find its entry.
                return kernelCacheHit(d, p, existing, attributes);
            }
            if (d.liveHardware >= config.maxAh()) {
                throw new VerbsException("ibv_create_ah", Errno.ENOMEM, "max_ah " + config.maxAh() + " reached");
            }
            // The device picks the AHN: rdma-core's efa_create_ah takes it from the kernel's reply
            // (efa_address_handle), which the kernel's efa_create_ah has from the device's create
            // command; the device's choice is not public. Lowest free first is the worst case for
            // a reader of wc.slid (a destroyed AH's number is the next one given); the EFA double
            // (src/test/native/efa-double, ibv_create_ah) has it and the other end, round robin,
            // by its switch EFA_DOUBLE_AHN.
            int ahn = d.ahns.nextClearBit(0);
            d.ahns.set(ahn);
            d.liveHardware++;
            HardwareAh hw = new HardwareAh(ahn, key);
            if (existing == null) {
                d.byDestination.put(key, hw);
            } else {
                duplicatesCreated.incrementAndGet();
            }
            hardwareCreates.incrementAndGet();
            long live = liveAhs.incrementAndGet();
            peakLiveAhs.accumulateAndGet(live, Math::max);
            return handOut(d, p, hw, attributes);
        }
    }

    /** A duplicate answered from the kernel's cache: the same AHN, one more user. Holds d. */
    private CreatedAh kernelCacheHit(MockDevice d, MockPd p, HardwareAh cached, AddressHandleAttributes attributes) {
        kernelCacheHits.incrementAndGet();
        return handOut(d, p, cached, attributes);
    }

    /** A new struct ibv_ah on {@code hw}. Holds d. */
    private CreatedAh handOut(MockDevice d, MockPd p, HardwareAh hw, AddressHandleAttributes attributes) {
        hw.users++;
        p.ahCount++;
        long h = nextHandle.getAndIncrement();
        ahs.put(h, new MockAh(p, hw, attributes));
        if (!config.efa()) {
            network.resolve(h, d.index, attributes.dgid());
        }
        return new CreatedAh(h, config.efa() ? hw.ahn : CreatedAh.NO_AHN);
    }

    @Override
    public void destroyAh(long ah) {
        destroyCalls.incrementAndGet();
        systemCall();
        MockAh a = ahs.get(ah);
        if (a == null) {
            throw new VerbsException("ibv_destroy_ah", Errno.EINVAL, "unknown or destroyed AH");
        }
        MockDevice d = a.pd.context.device;
        if (config.duplicatePolicy() == DuplicatePolicy.KERNEL_CACHED) {
            synchronized (d) {
                // Not the last user: the kernel drops a reference and sends the device nothing.
                if (a.hardware.users > 1) {
                    if (ahs.remove(ah) == null) {
                        throw new VerbsException("ibv_destroy_ah", Errno.EINVAL, "unknown or destroyed AH");
                    }
                    release(d, a);
                    network.forget(ah);
                    return;
                }
            }
        }
        // The device's destroy command, which the faults below stand for: on failure the AH stays, as
        // in rdma-core, and so does a kernel-cached entry, later creates getting its AHN.
        int n = destroyFaults.get();
        while (n > 0) {
            if (destroyFaults.compareAndSet(n, n - 1)) {
                injectedFailures.incrementAndGet();
                throw new VerbsException("ibv_destroy_ah", destroyFaultErrno, "injected fault");
            }
            n = destroyFaults.get();
        }
        RandomFaults faults = randomFaults;
        if (faults.destroyProbability() > 0) {
            Errno errno = draw(faults.destroyProbability(), faults.destroyErrnos());
            if (errno != null) {
                injectedFailures.incrementAndGet();
                throw new VerbsException("ibv_destroy_ah", errno, "injected random fault");
            }
        }
        if (config.destroyLatencyNanos() > 0) {
            command(d, config.destroyLatencyNanos());
        }
        synchronized (d) {
            if (ahs.remove(ah) == null) {
                throw new VerbsException("ibv_destroy_ah", Errno.EINVAL, "unknown or destroyed AH");
            }
            release(d, a);
            network.forget(ah);
        }
    }

    /** Drops one struct ibv_ah of a hardware AH, freeing the hardware AH with its last one. Holds d. */
    private void release(MockDevice d, MockAh a) {
        a.pd.ahCount--;
        HardwareAh hw = a.hardware;
        if (--hw.users == 0) {
            d.ahns.clear(hw.ahn);
            d.liveHardware--;
            d.byDestination.remove(hw.key, hw);
            hardwareDestroys.incrementAndGet();
            liveAhs.decrementAndGet();
        }
    }

    /**
     * Entering and leaving the kernel for one verb. Spins: a system call is a microsecond or so, far
     * below what a timed park can wait (it wakes 50 us late or more).
     */
    private void systemCall() {
        long nanos = config.systemCallNanos();
        if (nanos > 0) {
            long deadline = System.nanoTime() + nanos;
            while (deadline - System.nanoTime() > 0) {
                Thread.onSpinWait();
            }
        }
    }

    private void injectCreateFault(AddressHandleAttributes attributes) {
        int n = createFaults.get();
        while (n > 0) {
            if (createFaults.compareAndSet(n, n - 1)) {
                injectedFailures.incrementAndGet();
                throw new VerbsException("ibv_create_ah", createFaultErrno, "injected fault for " + attributes.dgid());
            }
            n = createFaults.get();
        }
        if (config.failureProbability() > 0) {
            boolean fail;
            synchronized (random) {
                fail = random.nextDouble() < config.failureProbability();
            }
            if (fail) {
                injectedFailures.incrementAndGet();
                throw new VerbsException("ibv_create_ah", config.randomFailureErrno(),
                        "injected random fault for " + attributes.dgid());
            }
        }
        RandomFaults faults = randomFaults;
        if (faults.createProbability() > 0) {
            Errno errno = draw(faults.createProbability(), faults.createErrnos());
            if (errno != null) {
                injectedFailures.incrementAndGet();
                throw new VerbsException("ibv_create_ah", errno, "injected random fault for " + attributes.dgid());
            }
        }
    }

    /** An errno from {@code errnos} with probability {@code p}, else null. */
    private synchronized Errno draw(double p, List<Errno> errnos) {
        if (faultRandom.nextDouble() >= p) {
            return null;
        }
        return errnos.get(faultRandom.nextInt(errnos.size()));
    }

    /**
     * From now on, every create and destroy that sends the device a command fails at random as
     * {@code faults} says, on top of
     * {@link #failNextCreates}, {@link #failNextDestroys} and the configured
     * {@link MockConfig#failureProbability()}. {@link RandomFaults#NONE} stops it. Restarts the
     * draws from {@code faults.seed()}.
     *
     * @param faults the probabilities and errnos of creates and destroys that fail
     * @throws NullPointerException if {@code faults} is null
     */
    public synchronized void injectRandomFaults(RandomFaults faults) {
        faultRandom = new SplittableRandom(Objects.requireNonNull(faults, "faults").seed());
        randomFaults = faults;
    }

    /** One admin command of the given latency: through the device's queue when it has a depth. */
    private static void command(MockDevice d, long nanos) {
        if (d.adminQueue != null) {
            d.adminQueue.execute(nanos);
        } else {
            park(nanos);
        }
    }

    private static void park(long nanos) {
        long deadline = System.nanoTime() + nanos;
        long left;
        while ((left = deadline - System.nanoTime()) > 0) {
            LockSupport.parkNanos(left);
        }
    }

    /**
     * The next {@code count} creates that send the device a command fail with {@code errno}, after
     * the create latency, leaving the device table unchanged (a kernel-cached duplicate sends none,
     * so it neither fails nor counts). The count is shared by whichever threads create next; a new
     * call replaces the previous count and errno.
     *
     * @param count creates to fail; 0 or less stops the injection
     * @param errno what they fail with (as {@link org.efaah.verbs.VerbsException#errno()})
     * @throws NullPointerException if {@code errno} is null
     */
    public void failNextCreates(int count, Errno errno) {
        createFaultErrno = Objects.requireNonNull(errno, "errno");
        createFaults.set(count);
    }

    /**
     * The next {@code count} destroys that send the device a command fail with {@code errno}; the AHs
     * stay allocated, as in rdma-core (a kernel-cached AH stays cached). A kernel-cached AH's destroy
     * sends a command only for its last user. A new call replaces the previous count and errno.
     *
     * @param count destroys to fail; 0 or less stops the injection
     * @param errno what they fail with
     * @throws NullPointerException if {@code errno} is null
     */
    public void failNextDestroys(int count, Errno errno) {
        destroyFaultErrno = Objects.requireNonNull(errno, "errno");
        destroyFaults.set(count);
    }

    /**
     * From now on (true) every GID type and netdev query fails as the native provider's does on a
     * libibverbs without {@code ibv_query_gid_ex} (rdma-core older than 32, which added it): with
     * {@link VerbsException} EOPNOTSUPP; false answers them again. {@code ibv_query_gid} still
     * answers, as it does there.
     *
     * @param lacking true to answer as such a libibverbs
     */
    public void lackQueryGidEx(boolean lacking) {
        lackQueryGidEx = lacking;
    }

    private volatile boolean lackQueryGidEx;

    /* NativeVerbsProvider.queryGidType and queryGidNetdev: the C stub's -EOPNOTSUPP where dlsym finds no
     * _ibv_query_gid_ex becomes this exception, message included. */
    private void checkQueryGidEx() {
        if (lackQueryGidEx) {
            throw new VerbsException("ibv_query_gid_ex", Errno.EOPNOTSUPP, "this libibverbs has no ibv_query_gid_ex");
        }
    }

    /**
     * What the provider has done so far, across all devices. The counters are read one by one,
     * not atomically together: under concurrent calls they may be a few operations apart.
     *
     * @return a snapshot of the call, hardware and fault counters
     */
    public MockCounters counters() {
        return new MockCounters(createCalls.get(), destroyCalls.get(), hardwareCreates.get(), hardwareDestroys.get(),
                liveAhs.get(), peakLiveAhs.get(), duplicatesRefused.get(), duplicatesCreated.get(), kernelCacheHits.get(),
                injectedFailures.get(), ahs.size());
    }

    /**
     * The AHNs live on device {@code index} now, in increasing order: the device's AH table.
     *
     * @param index the device's position, 0-based ({@code efa_<index>})
     * @return a fresh array of the live AHNs (each 0..65535)
     * @throws IndexOutOfBoundsException if there is no device {@code index}
     */
    public int[] liveAhns(int index) {
        MockDevice d = devices.get(index);
        synchronized (d) {
            return d.ahns.stream().toArray();
        }
    }

    long newHandle() {
        return nextHandle.getAndIncrement();
    }

    MockContext context(long handle, String operation) {
        MockContext c = contexts.get(handle);
        if (c == null) {
            throw new VerbsException(operation, Errno.EINVAL, "unknown device context");
        }
        return c;
    }

    @Override
    public long createCq(long context, int entries) {
        return fabric.createCq(context(context, "ibv_create_cq"), entries, false);
    }

    @Override
    public void destroyCq(long cq) {
        fabric.destroyCq(cq);
    }

    @Override
    public long createCompletionChannel(long context) {
        return fabric.createChannel(context(context, "ibv_create_comp_channel"));
    }

    @Override
    public long createCq(long context, int entries, long channel) {
        return fabric.createCq(context(context, "ibv_create_cq"), entries, false, channel, cqNotifications);
    }

    @Override
    public void requestCqNotification(long cq) {
        fabric.requestNotification(cq);
    }

    @Override
    public int awaitCqEvents(long channel, int timeoutMillis) {
        return fabric.channel(channel, "ibv_get_cq_event").await(timeoutMillis);
    }

    @Override
    public void stopCompletionChannel(long channel) {
        fabric.channel(channel, "efa_ah_channel_stop").stop();
    }

    @Override
    public void wakeCompletionChannel(long channel) {
        fabric.channel(channel, "efa_ah_channel_wake").wake();
    }

    /** The mock has no file descriptors: -1. */
    @Override
    public int completionChannelFd(long channel) {
        fabric.channel(channel, "efa_ah_channel_fd");
        return -1;
    }

    @Override
    public void destroyCompletionChannel(long channel) {
        fabric.destroyChannel(channel);
    }

    /**
     * Events the channel has posted so far: one per armed CQ's next completion.
     *
     * @param channel a handle {@link #createCompletionChannel} returned
     * @return the count since the channel was made
     */
    public long eventsPosted(long channel) {
        return fabric.channel(channel, "eventsPosted").eventsPosted();
    }

    /**
     * Whether EFA devices report CQ notifications from now on (true by default). Without them a CQ
     * with a completion channel is refused with EOPNOTSUPP ({@code efa_create_cq_ex}), as on EFA
     * devices that predate them, and endpoints poll.
     *
     * @param supported false to refuse completion channels on EFA devices
     */
    public void cqNotifications(boolean supported) {
        cqNotifications = supported;
    }

    @Override
    public long registerMemory(long pd, java.nio.ByteBuffer buffer) {
        return fabric.registerMemory(pd(pd, "ibv_reg_mr"), buffer);
    }

    @Override
    public void deregisterMemory(long mr) {
        fabric.deregisterMemory(mr);
    }

    @Override
    public org.efaah.verbs.spi.QueuePairNumbers createUdQp(long pd, long sendCq, long recvCq, int maxSendWr, int maxRecvWr) {
        return fabric.createQp(org.efaah.verbs.QueuePairType.UD, pd(pd, "ibv_create_qp"), sendCq, recvCq, maxSendWr,
                maxRecvWr);
    }

    @Override
    public void activateUdQp(long qp, int portNum, int pkeyIndex, int qkey) {
        fabric.activateUdQp(qp, portNum, pkeyIndex, qkey);
    }

    @Override
    public void destroyQp(long qp) {
        fabric.destroyQp(qp);
    }

    @Override
    public void postSend(long qp, long ah, int remoteQpn, int remoteQkey, long mr, int offset, int length, long wrId) {
        MockAh a = ahs.get(ah);
        if (a == null) {
            throw new VerbsException("ibv_post_send", Errno.EINVAL, "unknown or destroyed AH");
        }
        fabric.postSend(qp, a, remoteQpn, remoteQkey, mr, offset, length, wrId);
    }

    @Override
    public void postReceive(long qp, long mr, int offset, int length, long wrId) {
        fabric.postReceive(qp, mr, offset, length, wrId);
    }

    @Override
    public int pollCq(long cq, org.efaah.verbs.WorkCompletion[] into) {
        return fabric.pollCq(cq, into, false);
    }

    @Override
    public AddressHandleAttributes initAhFromWc(long context, int portNum, org.efaah.verbs.WorkCompletion wc,
                                                long mr, int grhOffset) {
        return fabric.initAhFromWc(context(context, "ibv_init_ah_from_wc").device, portNum, wc, mr, grhOffset);
    }

    @Override
    public int queryQpState(long qp) {
        return fabric.queryQpState(qp);
    }

    @Override
    public void resetQp(long qp) {
        fabric.resetQp(qp);
    }

    @Override
    public void moveQpToError(long qp) {
        fabric.moveQpToError(qp);
    }

    /**
     * The EFA extensions of the EFA model; EOPNOTSUPP when the mock models RoCE, as libefa
     * answers for a device that is not EFA.
     */
    @Override
    public org.efaah.verbs.spi.EfaVerbs efa() {
        if (!config.efa()) {
            throw new VerbsException("efadv", Errno.EOPNOTSUPP, "the mock's devices model RoCE, not EFA");
        }
        return efaVerbs;
    }

    private volatile boolean cqNotifications = true;

    private final org.efaah.verbs.spi.EfaVerbs efaVerbs = new org.efaah.verbs.spi.EfaVerbs() {
        @Override
        public long createCqWithSourceGid(long context, int entries) {
            MockContext c = context(context, "efadv_create_cq");
            createCqWithSourceGidCheck();
            return fabric.createCq(c, entries, true);
        }

        @Override
        public long createCqWithSourceGid(long context, int entries, long channel) {
            createCqWithSourceGidCheck();
            return fabric.createCq(context(context, "efadv_create_cq"), entries, true, channel, cqNotifications);
        }

        /** efadv_create_cq accepts EFADV_WC_EX_WITH_SGID only where the device reports the capability. */
        private void createCqWithSourceGidCheck() {
            if ((config.efaDeviceCaps() & org.efaah.verbs.EfaDeviceAttributes.CAPS_CQ_WITH_SGID) == 0) {
                throw new VerbsException("efadv_create_cq", Errno.EOPNOTSUPP,
                        "EFADV_WC_EX_WITH_SGID: the device does not report EFADV_DEVICE_ATTR_CAPS_CQ_WITH_SGID");
            }
        }

        @Override
        public int pollCqWithSourceGid(long cq, org.efaah.verbs.WorkCompletion[] into) {
            return fabric.pollCq(cq, into, true);
        }

        @Override
        public org.efaah.verbs.spi.QueuePairNumbers createSrdQp(long pd, long sendCq, long recvCq, int maxSendWr,
                                                            int maxRecvWr) {
            return fabric.createQp(org.efaah.verbs.QueuePairType.SRD, pd(pd, "efadv_create_qp_ex"), sendCq, recvCq,
                    maxSendWr, maxRecvWr);
        }

        @Override
        public org.efaah.verbs.EfaDeviceAttributes queryDevice(long context) {
            context(context, "efadv_query_device");
            // Figures of a current EFA device as efadv_query_device reports them.
            return new org.efaah.verbs.EfaDeviceAttributes(MockAttributes.MAX_QP_WR, MockAttributes.MAX_QP_WR,
                    MockAttributes.MAX_SEND_SGE, MockAttributes.MAX_RECV_SGE, 32, config.efaDeviceCaps(), 1 << 30);
        }

        @Override
        public void activateSrdQp(long qp, int portNum, int qkey, int rnrRetry) {
            fabric.activateSrdQp(qp, portNum, qkey, rnrRetry);
        }

        /** efadv_get_max_sq_depth: MockConfig.efaMaxSqDepth, 0 meaning a libefa before rdma-core 63. */
        @Override
        public java.util.OptionalInt maxSqDepth(long context) {
            context(context, "efadv_get_max_sq_depth");
            int depth = config.efaMaxSqDepth();
            return depth > 0 ? java.util.OptionalInt.of(depth) : java.util.OptionalInt.empty();
        }

        @Override
        public java.util.OptionalInt maxRqDepth(long context) {
            context(context, "efadv_get_max_rq_depth");
            int depth = config.efaMaxRqDepth();
            return depth > 0 ? java.util.OptionalInt.of(depth) : java.util.OptionalInt.empty();
        }
    };

    /**
     * Holds back every send completion from now on (true), as a device under load would, until
     * called with false; then they reach their CQs in order. Lets tests make a sender wait.
     *
     * @param hold true to hold send completions back, false to release them
     */
    public void holdSendCompletions(boolean hold) {
        fabric.holdSendCompletions(hold);
    }

    /**
     * SRD delivery order from now on: with a seed, datagrams in flight are delivered in an order
     * drawn from it (EFA's SRD does not keep order); null restores order. Exactly once either way.
     *
     * @param seed the seed of the delivery order, or null for in-order delivery
     */
    public void reorderSrd(Long seed) {
        fabric.reorderSrd(seed);
    }

    /**
     * The AHN of {@code pd}'s live AH for {@code gid}, or -1: what an EFA device reports in
     * {@code wc.slid} for a datagram from {@code gid}.
     */
    int receiverAhn(MockPd pd, Gid gid) {
        MockDevice d = pd.context.device;
        synchronized (d) {
            HardwareAh hw = d.byDestination.get(new DestinationKey(pd.handle, gid));
            return hw == null ? -1 : hw.ahn;
        }
    }

    /** The device whose port 1 GID table holds {@code gid}, or null: how the fabric routes a datagram. */
    MockDevice deviceWithGid(Gid gid) {
        for (MockDevice d : devices) {
            for (Gid g : d.gids) {
                if (g.equals(gid)) {
                    return d;
                }
            }
        }
        return null;
    }

    private MockPd pd(long handle, String operation) {
        MockPd p = pds.get(handle);
        if (p == null) {
            throw new VerbsException(operation, Errno.EINVAL, "unknown PD");
        }
        return p;
    }

    @Override
    public void close() {
        // Nothing provider-wide to free: devices are closed by their owners.
    }

    @Override
    public long openAsyncEvents(long context) {
        context(context, "ibv_get_async_event");
        return events.open(context);
    }

    @Override
    public List<org.efaah.verbs.spi.AsyncEvent> awaitAsyncEvents(long channel, int timeoutMillis) {
        return events.await(channel, timeoutMillis, "ibv_get_async_event");
    }

    @Override
    public void wakeAsyncEvents(long channel) {
        events.wake(channel, "efa_ah_async_wake");
    }

    @Override
    public void closeAsyncEvents(long channel) {
        events.close(channel, "efa_ah_async_close");
    }

    /**
     * The netdev of every GID of a RoCE device's port ({@link MockNetwork#ifindex(int)}); 0 on EFA,
     * whose GIDs have none; ENODATA for an empty slot.
     */
    @Override
    public int queryGidNetdev(long context, int portNum, int index) {
        MockDevice d = context(context, "ibv_query_gid_ex").device;
        checkQueryGidEx();
        if (portNum != 1 || index < 0 || index >= d.gids.length) {
            throw new VerbsException("ibv_query_gid_ex", Errno.EINVAL, "port " + portNum + " index " + index);
        }
        if (d.gids[index].isZero()) {
            throw new VerbsException("ibv_query_gid_ex", Errno.ENODATA, "GID slot " + index + " is empty");
        }
        return config.efa() ? 0 : MockNetwork.ifindex(d.index);
    }

    @Override
    public long openNetworkChanges() {
        return network.open();
    }

    @Override
    public void requestNetworkDump(long channel, boolean links) {
        network.requestDump(channel, links);
    }

    @Override
    public List<org.efaah.verbs.spi.NetworkChange> awaitNetworkChanges(long channel, int timeoutMillis) {
        return network.await(channel, timeoutMillis);
    }

    @Override
    public void wakeNetworkChanges(long channel) {
        network.wake(channel);
    }

    @Override
    public void closeNetworkChanges(long channel) {
        network.close(channel);
    }

    /**
     * Raises an asynchronous event on every open context of device {@code deviceName}, as the
     * kernel does: each context's event reader gets its own copy.
     *
     * @param deviceName the device's name, e.g. {@code efa_0}
     * @param kind       the event, as {@code ibv_get_async_event(3)} would report it
     * @param portNum the 1-based port for port events, 0 for device events
     * @throws IllegalArgumentException if there is no such device, or {@code portNum} is outside 0..255
     * @throws NullPointerException if {@code kind} is null
     */
    public void raiseEvent(String deviceName, org.efaah.verbs.DeviceEvent.Kind kind, int portNum) {
        Objects.requireNonNull(kind, "kind");
        Ranges.check("portNum", portNum, 0, 255);
        MockDevice device = devices.stream().filter(d -> d.name.equals(deviceName)).findFirst()
                .orElseThrow(() -> new IllegalArgumentException("device: '" + deviceName + "' is not a mock device"));
        List<Long> open = new ArrayList<>();
        contexts.forEach((handle, c) -> {
            if (c.device == device) {
                open.add(handle);
            }
        });
        org.efaah.verbs.spi.AsyncEvent event = new org.efaah.verbs.spi.AsyncEvent(kind.value(), portNum);
        events.forEach(c -> {
            if (open.contains(c.context)) {
                c.post(event);
            }
        });
    }

    /**
     * Sets the state {@code ibv_query_port} reports for port 1 of {@code deviceName}, without an
     * event: as an EFA port that goes down, for which the EFA driver raises no port event (the
     * kernel's EFA driver handles only completion EQEs: no PORT_* event reaches user space). Raise {@code PORT_ERR} with
     * {@link #raiseEvent} too to model a device that reports it.
     *
     * @param deviceName the device's name, e.g. {@code efa_0}
     * @param state      {@code enum ibv_port_state}: 1 DOWN .. 5 ACTIVE_DEFER ({@link PortAttributes#STATE_ACTIVE} is 4)
     * @throws IllegalArgumentException if there is no such device or {@code state} is outside 0..5
     */
    public void setPortState(String deviceName, int state) {
        Ranges.check("state", state, 0, 5);
        devices.stream().filter(d -> d.name.equals(deviceName)).findFirst()
                .orElseThrow(() -> new IllegalArgumentException("device: '" + deviceName + "' is not a mock device"))
                .portState = state;
    }

    static final class MockDevice {
        final int index;
        final String name;
        /** What ibv_query_port reports for port 1; see {@link #setPortState}. */
        volatile int portState = PortAttributes.STATE_ACTIVE;
        final Gid[] gids;
        final BitSet ahns = new BitSet();
        final Map<DestinationKey, HardwareAh> byDestination = new HashMap<>();
        int liveHardware;
        int livePds; // guarded by this
        final MockAdminQueue adminQueue;

        MockDevice(int index, MockConfig config) {
            this.index = index;
            this.adminQueue = config.adminQueueDepth() > 0 ? new MockAdminQueue(config.adminQueueDepth()) : null;
            this.name = (config.efa() ? "efa_" : "roce_") + index;
            this.gids = new Gid[config.gidTableLength()];
            for (int i = 0; i < gids.length; i++) {
                // Link-local style GIDs that differ per device and index, unless given explicitly.
                gids[i] = index == 0 && i < config.gids().size() ? config.gids().get(i)
                        : Gid.of(0xfe80_0000_0000_0000L, 0x0200_00ff_fe00_0000L | ((long) index << 8) | i);
            }
        }
    }

    record MockContext(MockDevice device, AtomicInteger pdCount, AtomicInteger cqCount) {
        MockContext(MockDevice device) {
            this(device, new AtomicInteger(), new AtomicInteger());
        }

        /*
         * Written out, not generated: the generated ones link through java.lang.runtime.ObjectMethods,
         * whose shared method handles keep the library's class loader (issue 34, RecordLoaderTest,
         * NoObjectMethodsTest). Same meaning and format as the generated ones.
         */
        @Override
        public boolean equals(Object o) {
            return o == this || o instanceof MockContext that && Objects.equals(that.device, device)
                    && Objects.equals(that.pdCount, pdCount) && Objects.equals(that.cqCount, cqCount);
        }

        @Override
        public int hashCode() {
            int h = Objects.hashCode(device);
            h = 31 * h + Objects.hashCode(pdCount);
            h = 31 * h + Objects.hashCode(cqCount);
            return h;
        }

        @Override
        public String toString() {
            return new StringBuilder("MockContext[device=").append(device).append(", pdCount=").append(pdCount)
                    .append(", cqCount=").append(cqCount).append(']').toString();
        }
    }

    static final class MockPd {
        final long handle;
        final MockContext context;
        int ahCount; // guarded by the device's monitor
        final AtomicInteger resources = new AtomicInteger(); // QPs and MRs, which also pin a PD

        MockPd(long handle, MockContext context) {
            this.handle = handle;
            this.context = context;
        }
    }

    private record DestinationKey(long pd, Object destination) {
        /*
         * Written out, not generated: the generated ones link through java.lang.runtime.ObjectMethods,
         * whose shared method handles keep the library's class loader (issue 34, RecordLoaderTest,
         * NoObjectMethodsTest). Same meaning and format as the generated ones.
         */
        @Override
        public boolean equals(Object o) {
            return o == this || o instanceof DestinationKey that && that.pd == pd
                    && Objects.equals(that.destination, destination);
        }

        @Override
        public int hashCode() {
            int h = Long.hashCode(pd);
            h = 31 * h + Objects.hashCode(destination);
            return h;
        }

        @Override
        public String toString() {
            return new StringBuilder("DestinationKey[pd=").append(pd).append(", destination=").append(destination)
                    .append(']').toString();
        }
    }

    static final class HardwareAh {
        final int ahn;
        final DestinationKey key;
        int users; // struct ibv_ah objects sharing this hardware AH (kernel-cached: more than one)

        HardwareAh(int ahn, DestinationKey key) {
            this.ahn = ahn;
            this.key = key;
        }
    }

    record MockAh(MockPd pd, HardwareAh hardware, AddressHandleAttributes attributes) {
        /*
         * Written out, not generated: the generated ones link through java.lang.runtime.ObjectMethods,
         * whose shared method handles keep the library's class loader (issue 34, RecordLoaderTest,
         * NoObjectMethodsTest). Same meaning and format as the generated ones.
         */
        @Override
        public boolean equals(Object o) {
            return o == this || o instanceof MockAh that && Objects.equals(that.pd, pd)
                    && Objects.equals(that.hardware, hardware) && Objects.equals(that.attributes, attributes);
        }

        @Override
        public int hashCode() {
            int h = Objects.hashCode(pd);
            h = 31 * h + Objects.hashCode(hardware);
            h = 31 * h + Objects.hashCode(attributes);
            return h;
        }

        @Override
        public String toString() {
            return new StringBuilder("MockAh[pd=").append(pd).append(", hardware=").append(hardware)
                    .append(", attributes=").append(attributes).append(']').toString();
        }
    }
}
