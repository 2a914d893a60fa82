package org.efaah.cache;

import ch.qos.logback.classic.Level;
import ch.qos.logback.classic.Logger;
import ch.qos.logback.classic.spi.ILoggingEvent;
import ch.qos.logback.core.AppenderBase;
import java.util.ArrayList;
import java.util.List;
import java.util.function.Consumer;
import org.junit.jupiter.api.extension.AfterEachCallback;
import org.junit.jupiter.api.extension.BeforeEachCallback;
import org.junit.jupiter.api.extension.ExtensionContext;
import org.slf4j.LoggerFactory;

/**
 * The cache's log (and the device's) while a test runs: kept for assertions instead of printed,
 * since a passing build prints no warning a reader must judge. An optional hook runs on the
 * logging thread for every event, before it is kept: a slow log write, for tests that need one.
 */
final class CapturedLog extends AppenderBase<ILoggingEvent> implements AutoCloseable {
    private final List<Logger> loggers = new ArrayList<>();
    private final List<Level> levels = new ArrayList<>();
    private final List<Boolean> additive = new ArrayList<>();
    private final List<ILoggingEvent> events = new ArrayList<>();
    volatile Consumer<ILoggingEvent> onEvent;
    /** Whether events are dropped rather than kept (long runs whose logs no assertion reads). */
    volatile boolean discard;

    /** Captures, at INFO and above, what the named classes' loggers write. */
    CapturedLog(Class<?>... sources) {
        setName("captured");
        start();
        for (Class<?> source : sources.length == 0 ? new Class<?>[] {AddressHandleCache.class} : sources) {
            Logger log = (Logger) LoggerFactory.getLogger(source);
            loggers.add(log);
            levels.add(log.getLevel());
            additive.add(log.isAdditive());
            log.setLevel(Level.INFO);
            log.setAdditive(false);
            log.addAppender(this);
        }
    }

    @Override
    protected void append(ILoggingEvent event) {
        Consumer<ILoggingEvent> hook = onEvent;
        if (hook != null) {
            hook.accept(event);
        }
        if (!discard) {
            synchronized (events) {
                events.add(event);
            }
        }
    }

    /** The messages, formatted, of the events at {@code level} or above. */
    List<String> messages(Level level) {
        synchronized (events) {
            return events.stream().filter(e -> e.getLevel().isGreaterOrEqual(level))
                    .map(ILoggingEvent::getFormattedMessage).toList();
        }
    }

    /** The events at {@code level} or above, with their throwables. */
    List<ILoggingEvent> events(Level level) {
        synchronized (events) {
            return events.stream().filter(e -> e.getLevel().isGreaterOrEqual(level)).toList();
        }
    }

    /** How many events at {@code level} or above contain {@code text}. */
    long count(Level level, String text) {
        return messages(level).stream().filter(m -> m.contains(text)).count();
    }

    @Override
    public void close() {
        for (int i = 0; i < loggers.size(); i++) {
            loggers.get(i).detachAppender(this);
            loggers.get(i).setAdditive(additive.get(i));
            loggers.get(i).setLevel(levels.get(i));
        }
        stop();
    }

    /**
     * For a test class whose tests provoke warnings on purpose (leaks at close, failed destroys,
     * devices closed under PDs): each test's log of the cache and the device is captured, not
     * printed.
     */
    static final class Quiet implements BeforeEachCallback, AfterEachCallback {
        private static final ExtensionContext.Namespace NAMESPACE = ExtensionContext.Namespace.create(Quiet.class);

        @Override
        public void beforeEach(ExtensionContext context) {
            context.getStore(NAMESPACE).put("log", new CapturedLog(AddressHandleCache.class, org.efaah.verbs.Device.class));
        }

        @Override
        public void afterEach(ExtensionContext context) {
            context.getStore(NAMESPACE).remove("log", CapturedLog.class).close();
        }
    }
}
