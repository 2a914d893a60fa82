package org.efaah.ud;

import jdk.jfr.Category;
import jdk.jfr.Description;
import jdk.jfr.Event;
import jdk.jfr.Label;
import jdk.jfr.Name;
import jdk.jfr.StackTrace;

/**
 * The JDK Flight Recorder event of an endpoint's QP recovery (RESET, INIT, RTR, RTS, or past the
 * flush bound a new QP and CQs, and the receives reposted), its duration the recovery's;
 * committed only while a recording enables it.
 */
@Name("org.efaah.QpRecovery")
@Label("QP Recovery")
@Category("efa-ah")
@Description("A UD/SRD endpoint took its QP out of the error state: reset, re-activated, receives reposted")
@StackTrace(false)
final class QpRecoveryRecord extends Event {
    @Label("Device")
    String device;
    @Label("QPN")
    @Description("the QPN after the recovery")
    int qpn;
    @Label("Recovery")
    @Description("how many recoveries the endpoint has made, this one included")
    long recovery;
    @Label("Remade")
    @Description("whether the QP and its CQs were made anew (a new QPN): the flushes did not come within the bound")
    boolean remade;
    @Label("Refused")
    @Description("the ibv_modify_qp that failed and so made the recovery remake the QP, with its errno, if one did")
    String refused;
}
