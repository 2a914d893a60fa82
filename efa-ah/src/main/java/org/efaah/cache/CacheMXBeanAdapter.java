package org.efaah.cache;

import java.util.Arrays;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.TreeMap;
import java.util.function.Predicate;
import javax.management.Attribute;
import javax.management.AttributeList;
import javax.management.AttributeNotFoundException;
import javax.management.JMException;
import javax.management.MBeanAttributeInfo;
import javax.management.MBeanException;
import javax.management.MBeanInfo;
import javax.management.MBeanOperationInfo;
import javax.management.ReflectionException;
import javax.management.StandardMBean;
import javax.management.openmbean.ArrayType;
import javax.management.openmbean.CompositeData;
import javax.management.openmbean.CompositeDataSupport;
import javax.management.openmbean.CompositeType;
import javax.management.openmbean.OpenDataException;
import javax.management.openmbean.OpenMBeanAttributeInfoSupport;
import javax.management.openmbean.OpenMBeanOperationInfoSupport;
import javax.management.openmbean.OpenMBeanParameterInfoSupport;
import javax.management.openmbean.OpenType;
import javax.management.openmbean.SimpleType;
import org.efaah.health.HealthReport;
import org.efaah.verbs.Gid;

/**
 * {@link AddressHandleCacheMXBean} over a cache's snapshot; holds the cache strongly while
 * registered. A {@link StandardMBean}, so that the MBean info carries a description of each
 * attribute, operation and parameter rather than their names.
 */
class CacheMXBeanAdapter extends StandardMBean implements AddressHandleCacheMXBean {
    private static final Map<String, String> DESCRIPTIONS = Map.ofEntries(
            Map.entry("Hits", "acquires served by an AH that already existed (no provider call); grows only"),
            Map.entry("Misses", "acquires that asked the provider for a new AH, successful or not; grows only"),
            Map.entry("HitRatio", "hits / (hits + misses), 0..1; 1 before any acquire"),
            Map.entry("HardwareCreates", "AHs created through the provider (ibv_create_ah); grows only"),
            Map.entry("HardwareDestroys", "AHs destroyed through the provider (ibv_destroy_ah), all causes; grows only"),
            Map.entry("CreateFailures", "provider creates that failed (any throwable); grows only"),
            Map.entry("DestroyFailures", "provider destroys that failed, each attempt (the AH is kept and retried)"),
            Map.entry("CreateFailuresByErrno", "provider creates that failed, by errno name (UNKNOWN: no errno)"),
            Map.entry("AverageCreateNanos", "mean time of a successful provider create, ns; 0 before any"),
            Map.entry("MaxCreateNanos", "the longest successful provider create since the cache was built, ns"),
            Map.entry("LeaksReported", "handles garbage-collected without close(), plus handles open at cache close"),
            Map.entry("Retained", "last closes that kept their AH (retention policy)"),
            Map.entry("Revived", "acquires that took back a kept AH: creates saved"),
            Map.entry("Invalidated", "live entries invalidated, explicitly or by a device event"),
            Map.entry("Evictions", "AHs destroyed to save resources: idle, beyond the bound, for an ENOMEM"),
            Map.entry("DestroysByCause", "AHs destroyed, by RemovalCause"),
            Map.entry("LiveEntries", "hardware AHs the cache holds now, referenced or not"),
            Map.entry("LiveHandles", "handles acquired or duplicated and not yet closed, now"),
            Map.entry("PeakEntries", "the most hardware AHs the cache held at once"),
            Map.entry("RetainedEntries", "unreferenced AHs kept now by the retention policy"),
            Map.entry("Health", "health report: status (UP, DEGRADED, DOWN) and every check with its figure "
                    + "and threshold (devices, ports, max_ah, max_pd, create failures, undestroyed AHs, leaks)"),
            Map.entry("HealthStatus", "UP, DEGRADED or DOWN: the Health report's status"),
            Map.entry("invalidateAll", "invalidate every AH: new acquires create fresh AHs, handles out keep "
                    + "theirs until closed; returns the entries invalidated"),
            Map.entry("entries", "list entries (device, pd, dgid, AHN, references, state, age, idle time, "
                    + "invalidated, destroy failed, leaked handles), at most limit, filtered by device, PD id and destination GID (empty: any)"),
            Map.entry("limit", "the most rows, 1..1000000"),
            Map.entry("device", "a device name such as efa_0, or empty for any"),
            Map.entry("pd", "a PD id such as pd@1b6d3586 (from a listing), or empty for any"),
            Map.entry("dgid", "a destination GID such as fe80::1, or empty for any"));
    private static final String HEALTH = "Health";
    private static final String ENTRIES = "entries";
    private static final CompositeType ENTRY_TYPE;
    private static final ArrayType<CompositeData[]> ENTRIES_TYPE;
    private static final String[] ENTRY_ITEMS = {"device", "pd", "dgid", "portNum", "sgidIndex", "ahn", "references",
        "state", "ageNanos", "idleNanos", "invalidated", "destroyFailed", "leaks"};

    static {
        try {
            ENTRY_TYPE = new CompositeType("org.efaah.cache.AddressHandleEntry", "one entry of the AH cache",
                    ENTRY_ITEMS, ENTRY_ITEMS, new OpenType<?>[] {SimpleType.STRING, SimpleType.STRING,
                        SimpleType.STRING, SimpleType.INTEGER, SimpleType.INTEGER, SimpleType.INTEGER,
                        SimpleType.INTEGER, SimpleType.STRING, SimpleType.LONG, SimpleType.LONG, SimpleType.BOOLEAN,
                        SimpleType.BOOLEAN, SimpleType.INTEGER});
            ENTRIES_TYPE = ArrayType.getArrayType(ENTRY_TYPE);
        } catch (OpenDataException e) {
            throw new ExceptionInInitializerError(e);
        }
    }

    private final AddressHandleCache cache;

    CacheMXBeanAdapter(AddressHandleCache cache) {
        super(AddressHandleCacheMXBean.class, true);
        this.cache = cache;
    }

    @Override
    protected String getDescription(MBeanInfo info) {
        return "efa-ah AddressHandleCache: refcounted, deduplicated RDMA Address Handles (counters, "
                + "health, entries)";
    }

    @Override
    protected String getDescription(MBeanAttributeInfo info) {
        return DESCRIPTIONS.getOrDefault(info.getName(), info.getDescription());
    }

    @Override
    protected String getDescription(MBeanOperationInfo info) {
        return DESCRIPTIONS.getOrDefault(info.getName(), info.getDescription());
    }

    @Override
    public long getHits() {
        return cache.stats().hits();
    }

    @Override
    public long getMisses() {
        return cache.stats().misses();
    }

    @Override
    public double getHitRatio() {
        return cache.stats().hitRatio();
    }

    @Override
    public long getHardwareCreates() {
        return cache.stats().hardwareCreates();
    }

    @Override
    public long getHardwareDestroys() {
        return cache.stats().hardwareDestroys();
    }

    @Override
    public long getCreateFailures() {
        return cache.stats().createFailures();
    }

    @Override
    public long getDestroyFailures() {
        return cache.stats().destroyFailures();
    }

    @Override
    public Map<String, Long> getCreateFailuresByErrno() {
        Map<String, Long> out = new TreeMap<>();
        cache.stats().createFailuresByErrno().forEach((k, v) -> out.put(k.name(), v));
        return out;
    }

    @Override
    public double getAverageCreateNanos() {
        return cache.stats().averageCreateNanos();
    }

    @Override
    public long getMaxCreateNanos() {
        return cache.stats().maxCreateNanos();
    }

    @Override
    public long getLeaksReported() {
        return cache.stats().leaksReported();
    }

    @Override
    public long getRetained() {
        return cache.stats().retained();
    }

    @Override
    public long getRevived() {
        return cache.stats().revived();
    }

    @Override
    public long getInvalidated() {
        return cache.stats().invalidated();
    }

    @Override
    public long getEvictions() {
        return cache.stats().evictions();
    }

    @Override
    public Map<String, Long> getDestroysByCause() {
        Map<String, Long> out = new TreeMap<>();
        cache.stats().destroysByCause().forEach((k, v) -> out.put(k.name(), v));
        return out;
    }

    @Override
    public long getLiveEntries() {
        return cache.inspection().liveEntries();
    }

    @Override
    public long getLiveHandles() {
        return cache.inspection().liveHandles();
    }

    @Override
    public long getPeakEntries() {
        return cache.inspection().peakEntries();
    }

    @Override
    public long getRetainedEntries() {
        return cache.inspection().retainedEntries();
    }

    @Override
    public String getHealthStatus() {
        return cache.inspection().health().status().name();
    }

    @Override
    public int invalidateAll() {
        return cache.invalidateAll();
    }

    // The Health attribute and the entries operation carry open types of their own, which the
    // MXBean introspector cannot derive from records: they are added to the info and served here.

    @Override
    public MBeanInfo getMBeanInfo() {
        MBeanInfo base = super.getMBeanInfo();
        MBeanAttributeInfo[] attributes = Arrays.copyOf(base.getAttributes(), base.getAttributes().length + 1);
        attributes[attributes.length - 1] = new OpenMBeanAttributeInfoSupport(HEALTH, DESCRIPTIONS.get(HEALTH),
                HealthReport.OPEN_TYPE, true, false, false);
        MBeanOperationInfo[] operations = Arrays.copyOf(base.getOperations(), base.getOperations().length + 1);
        OpenMBeanParameterInfoSupport[] parameters = {
            new OpenMBeanParameterInfoSupport("limit", DESCRIPTIONS.get("limit"), SimpleType.INTEGER),
            new OpenMBeanParameterInfoSupport("device", DESCRIPTIONS.get("device"), SimpleType.STRING),
            new OpenMBeanParameterInfoSupport("pd", DESCRIPTIONS.get("pd"), SimpleType.STRING),
            new OpenMBeanParameterInfoSupport("dgid", DESCRIPTIONS.get("dgid"), SimpleType.STRING)};
        operations[operations.length - 1] = new OpenMBeanOperationInfoSupport(ENTRIES, DESCRIPTIONS.get(ENTRIES),
                parameters, ENTRIES_TYPE, MBeanOperationInfo.INFO);
        return new MBeanInfo(base.getClassName(), base.getDescription(), attributes, base.getConstructors(),
                operations, base.getNotifications(), base.getDescriptor());
    }

    @Override
    public Object getAttribute(String attribute) throws AttributeNotFoundException, MBeanException,
            ReflectionException {
        return HEALTH.equals(attribute) ? cache.inspection().health().toCompositeData() : super.getAttribute(attribute);
    }

    @Override
    public AttributeList getAttributes(String[] attributes) {
        AttributeList out = new AttributeList();
        for (String name : attributes) {
            try {
                out.add(new Attribute(name, getAttribute(name)));
            } catch (JMException | RuntimeException e) {
                // As the MBean server's own getAttributes: an attribute that cannot be read is left out.
            }
        }
        return out;
    }

    @Override
    public Object invoke(String operation, Object[] params, String[] signature) throws MBeanException,
            ReflectionException {
        if (!ENTRIES.equals(operation)) {
            return super.invoke(operation, params, signature);
        }
        if (params == null || params.length != 4 || !(params[0] instanceof Integer limit)) {
            throw new ReflectionException(new NoSuchMethodException(ENTRIES + " takes (int limit, String device, "
                    + "String pd, String dgid)"));
        }
        try {
            return entries(limit, (String) params[1], (String) params[2], (String) params[3]);
        } catch (IllegalArgumentException e) {
            throw new MBeanException(e, e.getMessage());
        }
    }

    private CompositeData[] entries(int limit, String device, String pd, String dgid) {
        List<AddressHandleEntry> rows = cache.inspection().entries(filter(device, pd, dgid), limit);
        CompositeData[] out = new CompositeData[rows.size()];
        try {
            for (int i = 0; i < out.length; i++) {
                AddressHandleEntry r = rows.get(i);
                out[i] = new CompositeDataSupport(ENTRY_TYPE, ENTRY_ITEMS, new Object[] {r.device(), r.pd(),
                    r.dgid() == null ? "" : r.dgid().toString(), r.portNum(), r.sgidIndex(), r.ahn(), r.references(),
                    r.state(), r.ageNanos(), r.idleNanos(), r.invalidated(), r.destroyFailed(), r.leaks()});
            }
        } catch (OpenDataException e) {
            throw new IllegalStateException("an entry does not fit its own open type", e);
        }
        return out;
    }

    /*
     * The operation's filter from its text arguments, as the command line sends them: an empty or
     * null one matches every entry; the PD id is compared in lower case, the GID as a GID (so
     * fe80::1 matches fe80:0::1). Gid.parse throws IllegalArgumentException for a bad dgid,
     * which invoke() turns into the MBeanException the client sees.
     */
    static Predicate<AddressHandleEntry> filter(String device, String pd, String dgid) {
        String d = blankToNull(device);
        String p = blankToNull(pd) == null ? null : pd.trim().toLowerCase(Locale.ROOT);
        Gid g = blankToNull(dgid) == null ? null : Gid.parse(dgid.trim());
        return e -> (d == null || d.equals(e.device())) && (p == null || p.equals(e.pd()))
                && (g == null || g.equals(e.dgid()));
    }

    private static String blankToNull(String s) {
        return s == null || s.isBlank() ? null : s.trim();
    }
}
