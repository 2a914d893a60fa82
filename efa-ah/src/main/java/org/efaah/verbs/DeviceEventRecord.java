package org.efaah.verbs;

import jdk.jfr.Category;
import jdk.jfr.Description;
import jdk.jfr.Event;
import jdk.jfr.Label;
import jdk.jfr.Name;
import jdk.jfr.StackTrace;

/**
 * The JDK Flight Recorder event of a device's asynchronous event ({@code ibv_get_async_event(3)}),
 * committed as the event thread hands it to the listeners, only while a recording enables it.
 */
@Name("org.efaah.DeviceEvent")
@Label("Device Event")
@Category("efa-ah")
@Description("An asynchronous event of a verbs device (ibv_get_async_event): port, GID, QP, CQ or fatal")
@StackTrace(false)
final class DeviceEventRecord extends Event {
    @Label("Device")
    String device;
    @Label("Kind")
    @Description("enum ibv_event_type, without its IBV_EVENT_ prefix")
    String kind;
    @Label("Port")
    @Description("the 1-based port of a port event, 0 otherwise")
    int portNum;

    static void emit(DeviceEvent e) {
        DeviceEventRecord r = new DeviceEventRecord();
        if (r.shouldCommit()) {
            r.device = e.device().name();
            r.kind = e.kind().name();
            r.portNum = e.portNum();
            r.commit();
        }
    }
}
