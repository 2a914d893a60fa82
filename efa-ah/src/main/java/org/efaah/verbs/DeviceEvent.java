package org.efaah.verbs;

import org.efaah.internal.Ranges;
import java.util.Objects;

/**
 * One asynchronous event of a device ({@code struct ibv_async_event}, read with
 * {@code ibv_get_async_event(3)} and acknowledged at once), as delivered to the listeners of a
 * {@link Device}.
 *
 * @param device  the device that reported it
 * @param kind    what happened ({@code enum ibv_event_type})
 * @param portNum the 1-based port for port events ({@code PORT_ACTIVE}, {@code PORT_ERR},
 *                {@code GID_CHANGE}, {@code LID_CHANGE}, ...); 0 for events of the whole device or
 *                of a QP, CQ or SRQ
 */
public record DeviceEvent(Device device, Kind kind, int portNum) {

    /**
     * Checks the fields.
     *
     * @param device  not null
     * @param kind    not null
     * @param portNum 0..255
     * @throws NullPointerException     if {@code device} or {@code kind} is null
     * @throws IllegalArgumentException if {@code portNum} is outside 0..255
     */
    public DeviceEvent {
        Objects.requireNonNull(device, "device");
        Objects.requireNonNull(kind, "kind");
        Ranges.check("portNum", portNum, 0, 255);
    }

    /** {@code enum ibv_event_type}, with the values libibverbs gives them. */
    public enum Kind {
        /** A CQ overran or failed; its QPs get errors. */
        CQ_ERR(0),
        /** A QP hit an error that stopped it; it is in the error state. */
        QP_FATAL(1),
        /** A QP received an invalid request from its peer. */
        QP_REQ_ERR(2),
        /** A QP's peer violated an access right. */
        QP_ACCESS_ERR(3),
        /** The first message arrived on a QP in RTR (connected QPs). */
        COMM_EST(4),
        /** A QP's send queue finished draining in SQD. */
        SQ_DRAINED(5),
        /** A connected QP moved to its alternate path. */
        PATH_MIG(6),
        /** Moving a connected QP to its alternate path failed. */
        PATH_MIG_ERR(7),
        /** The device failed: every object of the context is unusable and the context must be closed. */
        DEVICE_FATAL(8),
        /** A port became active (link up). */
        PORT_ACTIVE(9),
        /** A port left the active state (link down). */
        PORT_ERR(10),
        /** A port's LID changed (InfiniBand). */
        LID_CHANGE(11),
        /** A port's P_Key table changed. */
        PKEY_CHANGE(12),
        /** A port's subnet manager changed (InfiniBand). */
        SM_CHANGE(13),
        /** A shared receive queue failed. */
        SRQ_ERR(14),
        /** A shared receive queue fell below its limit. */
        SRQ_LIMIT_REACHED(15),
        /** A QP on a shared receive queue will take no more receives. */
        QP_LAST_WQE_REACHED(16),
        /** The subnet manager asks clients to register again (InfiniBand). */
        CLIENT_REREGISTER(17),
        /** A port's GID table changed: AHs made from old GIDs may be stale. */
        GID_CHANGE(18),
        /** A work queue failed. */
        WQ_FATAL(19),
        /** A value this library does not know (a newer libibverbs); the number is not kept. */
        UNKNOWN(-1);

        private final int value;

        Kind(int value) {
            this.value = value;
        }

        /**
         * The {@code IBV_EVENT_*} number, or -1 for {@link #UNKNOWN}.
         *
         * @return the number libibverbs uses
         */
        public int value() {
            return value;
        }

        /**
         * The kind for an {@code IBV_EVENT_*} number.
         *
         * @param value an {@code enum ibv_event_type} number
         * @return its kind; {@link #UNKNOWN} for any other number
         */
        public static Kind of(int value) {
            for (Kind k : values()) {
                if (k.value == value) {
                    return k;
                }
            }
            return UNKNOWN;
        }

        /**
         * Whether the event concerns one port (its {@link DeviceEvent#portNum()} is set).
         *
         * @return true for the port events
         */
        public boolean isPortEvent() {
            return this == PORT_ACTIVE || this == PORT_ERR || this == LID_CHANGE || this == PKEY_CHANGE
                    || this == SM_CHANGE || this == CLIENT_REREGISTER || this == GID_CHANGE;
        }
    }

    /*
     * Written out, not generated: the generated ones link through java.lang.runtime.ObjectMethods,
     * whose shared method handles keep the library's class loader (issue 34, RecordLoaderTest,
     * NoObjectMethodsTest). Same meaning and format as the generated ones.
     */
    @Override
    public boolean equals(Object o) {
        return o == this || o instanceof DeviceEvent that && Objects.equals(that.device, device)
                && Objects.equals(that.kind, kind) && that.portNum == portNum;
    }

    @Override
    public int hashCode() {
        int h = Objects.hashCode(device);
        h = 31 * h + Objects.hashCode(kind);
        h = 31 * h + portNum;
        return h;
    }

    @Override
    public String toString() {
        return new StringBuilder("DeviceEvent[device=").append(device).append(", kind=").append(kind)
                .append(", portNum=").append(portNum).append(']').toString();
    }
}
