package org.efaah.cache;

import jdk.jfr.Category;
import jdk.jfr.Description;
import jdk.jfr.Event;
import jdk.jfr.Label;
import jdk.jfr.Name;
import jdk.jfr.StackTrace;
import jdk.jfr.Timespan;
import org.efaah.verbs.Errno;

/**
 * The cache's JDK Flight Recorder events, one small class per occurrence, each committed only
 * while a recording enables it ({@code shouldCommit()}); none is ever made on the hit path. Names
 * are {@code org.efaah.*}, category "efa-ah". Off, an event costs a check of a static flag that
 * the JIT folds.
 */
final class JfrEvents {
    private JfrEvents() {
    }


    static void created(Entry e, long nanos) {
        AhCreate ev = new AhCreate();
        if (ev.shouldCommit()) {
            fill(ev, e, nanos);
            ev.ahn = e.hardware.ahn();
            ev.commit();
        }
    }

    static void createFailed(Entry e, Throwable failure, Errno errno, long nanos) {
        AhCreate ev = new AhCreate();
        if (ev.shouldCommit()) {
            fill(ev, e, nanos);
            ev.ahn = -1;
            ev.errno = errno == null ? null : errno.name();
            ev.failure = failure.toString();
            ev.commit();
        }
    }

    private static void fill(AhCreate ev, Entry e, long nanos) {
        ev.device = e.pd.device().name();
        ev.pd = AddressHandleEntry.pdId(e.pd);
        ev.dgid = e.dgid() == null ? null : e.dgid().toString();
        ev.createTime = nanos;
    }

    static void destroyed(Entry e, RemovalCause cause) {
        AhDestroy ev = new AhDestroy();
        if (ev.shouldCommit()) {
            ev.device = e.pd.device().name();
            ev.pd = AddressHandleEntry.pdId(e.pd);
            ev.dgid = e.dgid() == null ? null : e.dgid().toString();
            ev.ahn = e.hardware.ahn();
            ev.cause = cause.name();
            ev.commit();
        }
    }

    static void evictedForEnomem(Entry creating, int wanted, int evicted) {
        AhEnomemEviction ev = new AhEnomemEviction();
        if (ev.shouldCommit()) {
            ev.device = creating.pd.device().name();
            ev.dgid = creating.dgid() == null ? null : creating.dgid().toString();
            ev.wanted = wanted;
            ev.evicted = evicted;
            ev.commit();
        }
    }

    static void invalidated(String scope, int count) {
        AhInvalidation ev = new AhInvalidation();
        if (ev.shouldCommit()) {
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
