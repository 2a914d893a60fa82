package org.efaah.cache;

import ch.qos.logback.classic.Logger;
import ch.qos.logback.classic.spi.ILoggingEvent;
import ch.qos.logback.core.read.ListAppender;
import java.util.List;
import org.slf4j.LoggerFactory;

/** Takes the given loggers' output off the console while open, for tests that expect it. */
final class LogCapture implements AutoCloseable {
    private final List<Logger> loggers;
    private final ListAppender<ILoggingEvent> appender = new ListAppender<>();

    LogCapture(Class<?>... classes) {
        appender.start();
        loggers = java.util.Arrays.stream(classes).map(c -> (Logger) LoggerFactory.getLogger(c)).toList();
        for (Logger l : loggers) {
            l.addAppender(appender);
            l.setAdditive(false);
        }
    }

    List<String> messages() {
        return appender.list.stream().map(e -> e.getLevel() + " " + e.getFormattedMessage()).toList();
    }

    @Override
    public void close() {
        for (Logger l : loggers) {
            l.detachAppender(appender);
            l.setAdditive(true);
        }
    }
}
