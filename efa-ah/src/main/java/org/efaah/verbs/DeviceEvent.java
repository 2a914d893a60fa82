package org.efaah.verbs;

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

    public DeviceEvent {
        Objects.requireNonNull(device, "device");
        Objects.requireNonNull(kind, "kind");
        Ranges.check("portNum", portNum, 0, 255);
    }

    /** {@code enum ibv_event_type}, with the values libibverbs gives them. */
    public enum Kind {
        CQ_ERR(0), QP_FATAL(1), QP_REQ_ERR(2), QP_ACCESS_ERR(3), COMM_EST(4), SQ_DRAINED(5), PATH_MIG(6),
        PATH_MIG_ERR(7), DEVICE_FATAL(8), PORT_ACTIVE(9), PORT_ERR(10), LID_CHANGE(11), PKEY_CHANGE(12),
        SM_CHANGE(13), SRQ_ERR(14), SRQ_LIMIT_REACHED(15), QP_LAST_WQE_REACHED(16), CLIENT_REREGISTER(17),
        GID_CHANGE(18), WQ_FATAL(19),
        /** A value this library does not know (a newer libibverbs); the number is not kept. */
        UNKNOWN(-1);

        private final int value;

        Kind(int value) {
            this.value = value;
        }

        /** The {@code IBV_EVENT_*} number, or -1 for {@link #UNKNOWN}. */
        public int value() {
            return value;
        }

        /** The kind for an {@code IBV_EVENT_*} number; {@link #UNKNOWN} for any other. */
        public static Kind of(int value) {
            for (Kind k : values()) {
                if (k.value == value) {
                    return k;
                }
            }
            return UNKNOWN;
        }

        /** Whether the event concerns one port (its {@link DeviceEvent#portNum()} is set). */
        public boolean isPortEvent() {
            return this == PORT_ACTIVE || this == PORT_ERR || this == LID_CHANGE || this == PKEY_CHANGE
                    || this == SM_CHANGE || this == CLIENT_REREGISTER || this == GID_CHANGE;
        }
    }
}
