package org.efaah.cli;

import ch.qos.logback.classic.Level;
import ch.qos.logback.classic.LoggerContext;
import ch.qos.logback.classic.spi.Configurator;
import ch.qos.logback.classic.spi.ILoggingEvent;
import ch.qos.logback.classic.spi.IThrowableProxy;
import ch.qos.logback.classic.spi.ThrowableProxyUtil;
import ch.qos.logback.core.ConsoleAppender;
import ch.qos.logback.core.CoreConstants;
import ch.qos.logback.core.LayoutBase;
import ch.qos.logback.core.encoder.LayoutWrappingEncoder;
import ch.qos.logback.core.spi.ContextAwareBase;
import org.slf4j.Logger;

/**
 * The command line's logging, set up by Logback's {@link Configurator} service: WARN and ERROR and
 * the library's INFO lines on standard error as {@code LEVEL Logger: message}. Not an API: public
 * only for the {@link java.util.ServiceLoader} that Logback finds it with.
 */
public final class CliLogging extends ContextAwareBase implements Configurator {
    /*
     * Logback asks its configurators in turn, services first; this one configures only once
     * Main.useCliLogging() asked it to (the command line's JVM, not a test's, not another program
     * that has this jar on its class path), and only when the user named no configuration file of
     * their own (-Dlogback.configurationFile), which Logback's own Joran configurator then reads.
     * Code, not XML: Joran and the JDK's XML parser are about 450 classes and a quarter of a second
     * of a command's start on 2 cores (docs/benchmarks.md, "A first run"); and a layout of its own,
     * not PatternLayout, whose converters are some 150 classes more.
     */
    private static volatile boolean asked;

    /** For the {@link java.util.ServiceLoader}. */
    public CliLogging() {
    }

    /** From the command line's main: this configuration unless the user named a file of their own. */
    static void ask() {
        if (System.getProperty("logback.configurationFile") == null) {
            asked = true;
        }
    }

    @Override
    public ExecutionStatus configure(LoggerContext context) {
        if (!asked) {
            return ExecutionStatus.NEUTRAL;
        }
        Line line = new Line();
        line.setContext(context);
        line.start();
        LayoutWrappingEncoder<ILoggingEvent> encoder = new LayoutWrappingEncoder<>();
        encoder.setContext(context);
        encoder.setLayout(line);
        encoder.start();
        ConsoleAppender<ILoggingEvent> stderr = new ConsoleAppender<>();
        stderr.setContext(context);
        stderr.setName("STDERR");
        stderr.setTarget("System.err");
        stderr.setEncoder(encoder);
        stderr.start();
        ch.qos.logback.classic.Logger root = context.getLogger(Logger.ROOT_LOGGER_NAME);
        root.setLevel(Level.INFO);
        root.addAppender(stderr);
        // The commands print the provider chosen and why, once; the library's INFO line would repeat it.
        context.getLogger("org.efaah.verbs.VerbsProviders").setLevel(Level.WARN);
        return ExecutionStatus.DO_NOT_INVOKE_NEXT_IF_ANY;
    }

    /**
     * What the pattern {@code %-5level %logger{0}: %msg%n} prints, and the throwable after it as
     * PatternLayout adds it: {@code WARN  UdEndpoint: ...}.
     */
    private static final class Line extends LayoutBase<ILoggingEvent> {
        @Override
        public String doLayout(ILoggingEvent event) {
            StringBuilder b = new StringBuilder(128);
            String level = event.getLevel().toString();
            b.append(level);
            for (int i = level.length(); i < 6; i++) {
                b.append(' ');
            }
            String logger = event.getLoggerName();
            b.append(logger, logger.lastIndexOf('.') + 1, logger.length()).append(": ")
                    .append(event.getFormattedMessage()).append(CoreConstants.LINE_SEPARATOR);
            IThrowableProxy thrown = event.getThrowableProxy();
            if (thrown != null) {
                b.append(ThrowableProxyUtil.asString(thrown)); // each of its lines ends with a line separator
            }
            return b.toString();
        }
    }
}
