package org.efaah.verbs.spi;

import org.efaah.verbs.DeviceEvent;

/**
 * One asynchronous event as a provider reads it ({@code struct ibv_async_event}, already
 * acknowledged with {@code ibv_ack_async_event(3)}): the raw material of a {@link DeviceEvent}.
 *
 * @param eventType the {@code enum ibv_event_type} number, see {@link DeviceEvent.Kind#of(int)}
 * @param portNum   {@code element.port_num} for port events, 0 for any other
 */
public record AsyncEvent(int eventType, int portNum) {
    /*
     * Written out, not generated: the generated ones link through java.lang.runtime.ObjectMethods,
     * whose shared method handles keep the library's class loader (issue 34, RecordLoaderTest,
     * NoObjectMethodsTest). Same meaning and format as the generated ones.
     */
    @Override
    public boolean equals(Object o) {
        return o == this || o instanceof AsyncEvent that && that.eventType == eventType && that.portNum == portNum;
    }

    @Override
    public int hashCode() {
        int h = eventType;
        h = 31 * h + portNum;
        return h;
    }

    @Override
    public String toString() {
        return new StringBuilder("AsyncEvent[eventType=").append(eventType).append(", portNum=").append(portNum)
                .append(']').toString();
    }
}
