package org.efaah.testlog;

import ch.qos.logback.classic.Level;
import ch.qos.logback.classic.Logger;
import ch.qos.logback.classic.spi.ILoggingEvent;
import ch.qos.logback.core.read.ListAppender;
import java.util.List;
import java.util.stream.Collectors;
import org.slf4j.LoggerFactory;

/**
 * Captures what one logger (and its children) logs while open, instead of printing it: a test
 * that provokes an error asserts on the lines it expects, and a green run prints none of them.
 */
public final class LogCapture implements AutoCloseable {
    private final Logger logger;
    private final boolean additive;
    private final ListAppender<ILoggingEvent> appender = new ListAppender<>();

    private LogCapture(Class<?> source) {
        logger = (Logger) LoggerFactory.getLogger(source);
        additive = logger.isAdditive();
        appender.start();
        logger.addAppender(appender);
        logger.setAdditive(false);
    }

    /**
     * Starts capturing {@code source}'s logger.
     *
     * @param source the class whose logger is captured
     * @return the capture; close it to restore the logger
     */
    public static LogCapture of(Class<?> source) {
        return new LogCapture(source);
    }

    /**
     * The messages logged at {@code level} so far, formatted.
     *
     * @param level e.g. {@link Level#ERROR}
     * @return the messages, oldest first
     */
    public List<String> messages(Level level) {
        synchronized (appender.list) {
            return appender.list.stream().filter(e -> e.getLevel().equals(level))
                    .map(ILoggingEvent::getFormattedMessage).collect(Collectors.toList());
        }
    }

    @Override
    public void close() {
        logger.detachAppender(appender);
        logger.setAdditive(additive);
        appender.stop();
    }
}
