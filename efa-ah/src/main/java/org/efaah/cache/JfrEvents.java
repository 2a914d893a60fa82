package org.efaah.cache;

import jdk.jfr.Category;
import jdk.jfr.Description;
import jdk.jfr.Event;
import jdk.jfr.EventType;
import jdk.jfr.FlightRecorder;
import jdk.jfr.Label;
import jdk.jfr.Name;
import jdk.jfr.StackTrace;
import jdk.jfr.Timespan;
import org.efaah.verbs.Errno;

/**
 * The cache's JDK Flight Recorder events, one small class per occurrence, each committed only
 * while a recording enables it ({@code shouldCommit()}), each with the duration of what it
 * reports; none is ever made on the hit path. Names are {@code org.efaah.*}, category "efa-ah".
 * Off, an event costs a read of the recorder's flag and, once a recorder exists, of its type's.
 */
final class JfrEvents {
    private JfrEvents() {
    }


    // Each event times what it reports (begin() before the work, end() after), so a recording's
    // threshold applies to it. begin*() makes no event while its type is off: a miss then
    // allocates nothing here, the event being handed from the begin to the commit.
    // No event type is looked up before the JDK's recorder exists (a recording started, by
    // -XX:StartFlightRecording, jcmd JFR.start or new Recording()): EventType.getEventType builds
    // JFR's whole metadata, about 200 classes and a tenth of a second of a command line's start,
    // and until then no type can be on.

    /** Before a provider create: its event, begun, or null while the type is off. */
    static AhCreate beginCreate() {
        return FlightRecorder.isInitialized() && Types.CREATE.isEnabled() ? begun(new AhCreate()) : null;
    }

    static AhDestroy beginDestroy() {
        return FlightRecorder.isInitialized() && Types.DESTROY.isEnabled() ? begun(new AhDestroy()) : null;
    }

    static AhEnomemEviction beginEviction() {
        return FlightRecorder.isInitialized() && Types.EVICTION.isEnabled() ? begun(new AhEnomemEviction()) : null;
    }

    static AhInvalidation beginInvalidation() {
        return FlightRecorder.isInitialized() && Types.INVALIDATION.isEnabled()
                ? begun(new AhInvalidation()) : null;
    }

    /** The event types, looked up on first use once the recorder exists. */
    private static final class Types {
        static final EventType CREATE = EventType.getEventType(AhCreate.class);
        static final EventType DESTROY = EventType.getEventType(AhDestroy.class);
        static final EventType EVICTION = EventType.getEventType(AhEnomemEviction.class);
        static final EventType INVALIDATION = EventType.getEventType(AhInvalidation.class);

        private Types() {
        }
    }

    private static <T extends Event> T begun(T ev) {
        ev.begin();
        return ev;
    }

    static void created(AhCreate ev, Entry e, long nanos) {
        if (ev != null && ended(ev)) {
            fill(ev, e, nanos);
            ev.ahn = e.hardware().ahn();
            ev.commit();
        }
    }

    static void createFailed(AhCreate ev, Entry e, Throwable failure, Errno errno, long nanos) {
        if (ev != null && ended(ev)) {
            fill(ev, e, nanos);
            ev.ahn = -1;
            ev.errno = errno == null ? null : errno.name();
            ev.failure = failure.toString();
            ev.commit();
        }
    }

    private static boolean ended(Event ev) {
        ev.end();
        return ev.shouldCommit();
    }

    private static void fill(AhCreate ev, Entry e, long nanos) {
        ev.device = e.pd.device().name();
        ev.pd = AddressHandleEntry.pdId(e.pd);
        ev.dgid = e.dgid() == null ? null : e.dgid().toString();
        ev.createTime = nanos;
    }

    static void destroyed(AhDestroy ev, Entry e, RemovalCause cause) {
        if (ev != null && ended(ev)) {
            ev.device = e.pd.device().name();
            ev.pd = AddressHandleEntry.pdId(e.pd);
            ev.dgid = e.dgid() == null ? null : e.dgid().toString();
            ev.ahn = e.hardware().ahn();
            ev.cause = cause.name();
            ev.commit();
        }
    }

    static void evictedForEnomem(AhEnomemEviction ev, Entry creating, int wanted, int evicted) {
        if (ev != null && ended(ev)) {
            ev.device = creating.pd.device().name();
            ev.dgid = creating.dgid() == null ? null : creating.dgid().toString();
            ev.wanted = wanted;
            ev.evicted = evicted;
            ev.commit();
        }
    }

    static void invalidated(AhInvalidation ev, String scope, int count) {
        if (ev != null && ended(ev)) {
            ev.scope = scope;
            ev.entries = count;
            ev.commit();
        }
    }

    @Name("org.efaah.AhCreate")
    @Label("AH Create")
    @Category("efa-ah")
    @Description("A provider create of a hardware AH (ibv_create_ah), successful or failed")
    @StackTrace(false)
    static final class AhCreate extends Event {
        @Label("Device")
        String device;
        @Label("PD")
        String pd;
        @Label("Destination GID")
        String dgid;
        @Label("AHN")
        @Description("The AH number, -1 when the create failed or the device gives none")
        int ahn;
        @Label("Create Time")
        @Timespan(Timespan.NANOSECONDS)
        @Description("How long the provider create took, ENOMEM evictions and retries included")
        long createTime;
        @Label("Errno")
        @Description("The errno of a failed create; null when it succeeded or carried none")
        String errno;
        @Label("Failure")
        String failure;
    }

    @Name("org.efaah.AhDestroy")
    @Label("AH Destroy")
    @Category("efa-ah")
    @Description("A hardware AH destroyed (ibv_destroy_ah), with why")
    @StackTrace(false)
    static final class AhDestroy extends Event {
        @Label("Device")
        String device;
        @Label("PD")
        String pd;
        @Label("Destination GID")
        String dgid;
        @Label("AHN")
        int ahn;
        @Label("Removal Cause")
        @Description("org.efaah.cache.RemovalCause")
        String cause;
    }

    @Name("org.efaah.AhEnomemEviction")
    @Label("AH ENOMEM Eviction")
    @Category("efa-ah")
    @Description("A create answered ENOMEM (max_ah): unreferenced AHs of the device were destroyed to make room")
    @StackTrace(false)
    static final class AhEnomemEviction extends Event {
        @Label("Device")
        String device;
        @Label("Destination GID")
        @Description("The GID whose create answered ENOMEM")
        String dgid;
        @Label("Wanted")
        int wanted;
        @Label("Evicted")
        int evicted;
    }

    @Name("org.efaah.AhInvalidation")
    @Label("AH Invalidation")
    @Category("efa-ah")
    @Description("Entries invalidated, explicitly or by a device event")
    @StackTrace(false)
    static final class AhInvalidation extends Event {
        @Label("Scope")
        @Description("What was invalidated: a predicate's description")
        String scope;
        @Label("Entries")
        int entries;
    }
}
