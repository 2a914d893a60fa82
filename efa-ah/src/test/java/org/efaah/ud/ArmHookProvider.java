package org.efaah.ud;

import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicReference;
import org.efaah.verbs.ForwardingVerbsProvider;
import org.efaah.verbs.spi.VerbsProvider;

/**
 * A provider that runs a hook once, just before the next arm of a CQ ({@code beforeArm}), and
 * counts the sleeps on a completion channel ({@code sleeps}): how the wake-up races of a wait are
 * forced (a completion, a resend or a recovery made to land between a wait's last step and its arm).
 */
class ArmHookProvider extends ForwardingVerbsProvider {
    final AtomicReference<Runnable> beforeArm = new AtomicReference<>();
    final AtomicInteger sleeps = new AtomicInteger();

    ArmHookProvider(VerbsProvider delegate) {
        super(delegate);
    }

    @Override
    public void requestCqNotification(long cq) {
        Runnable hook = beforeArm.getAndSet(null);
        if (hook != null) {
            hook.run();
        }
        super.requestCqNotification(cq);
    }

    @Override
    public int awaitCqEvents(long channel, int timeoutMillis) {
        sleeps.incrementAndGet();
        return super.awaitCqEvents(channel, timeoutMillis);
    }
}
