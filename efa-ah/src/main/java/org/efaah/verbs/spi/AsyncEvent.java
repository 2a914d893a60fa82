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
}
