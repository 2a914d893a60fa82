package org.efaah.cli;

import java.io.PrintWriter;
import java.nio.file.AccessDeniedException;
import java.nio.file.FileSystemException;
import java.nio.file.NoSuchFileException;
import java.util.Arrays;
import picocli.CommandLine;
import picocli.CommandLine.Model.ArgSpec;
import picocli.CommandLine.Model.OptionSpec;
import picocli.CommandLine.ParameterException;
import picocli.CommandLine.ParseResult;

/**
 * Turns every failure into one line on standard error, "{@code efa-ah COMMAND: what and why}",
 * and an exit code: {@link Main#USAGE} for bad input, {@link Main#INTERRUPTED} for a wait that
 * Ctrl-C ended, {@link Main#FAILED} otherwise. The stack trace follows only with {@code --verbose}.
 */
final class Failures {
    private final Defaults defaults;
    private final String[] args;

    Failures(Defaults defaults, String[] args) {
        this.defaults = defaults;
        this.args = args.clone();
    }

    int onParameterException(ParameterException e, String[] ignored) {
        CommandLine cl = e.getCommandLine();
        String message = e.getMessage() + fromDefault(e.getArgSpec());
        if (e instanceof CommandLine.UnmatchedArgumentException u && !u.getSuggestions().isEmpty()) {
            // As git and picocli's own usage help do: the nearest names of what was mistyped.
            message += "; did you mean " + String.join(" or ", u.getSuggestions()) + "?";
        }
        print(cl, message + "; see '" + cl.getCommandSpec().qualifiedName() + " --help'", e);
        return Main.USAGE;
    }

    int onExecutionException(Exception e, CommandLine cl, ParseResult parseResult) {
        if (e instanceof ParameterException p) {
            return onParameterException(p, args);
        }
        if (interrupted(e)) {
            // Ctrl-C ended a wait before there was anything to sum up: the exit says so, whatever the wait.
            // The outermost message names the wait; its causes only repeat how the interrupt came.
            String what = message(e);
            print(cl, what.contains("interrupt") ? what : "interrupted: " + what, e);
            return Main.INTERRUPTED;
        }
        if (e instanceof IllegalArgumentException) {
            // Values the library checks (GIDs, addresses, ranges, -D settings) are the user's input too. Its
            // message says what is wrong and what is valid; a cause would only add a Java type's words
            // ("No enum constant ...").
            String what = e.getMessage() != null ? e.getMessage() : describe(e);
            print(cl, what + "; see '" + cl.getCommandSpec().qualifiedName() + " --help'", e);
            return Main.USAGE;
        }
        print(cl, describe(e), e);
        return Main.FAILED;
    }

    /** Whether {@code e} is what an interrupt (Ctrl-C) made of a wait. */
    static boolean interrupted(Throwable e) {
        if (Thread.currentThread().isInterrupted()) {
            return true;
        }
        for (Throwable c = e; c != null; c = c.getCause() == c ? null : c.getCause()) {
            if (c instanceof InterruptedException || c instanceof java.nio.channels.ClosedByInterruptException
                    || c instanceof org.efaah.verbs.InterruptedOperationException) {
                return true;
            }
        }
        return false;
    }

    private void print(CommandLine cl, String message, Throwable e) {
        PrintWriter err = cl.getErr();
        err.println(cl.getCommandSpec().qualifiedName() + ": " + message);
        if (verbose()) {
            e.printStackTrace(err);
        }
        err.flush();
    }

    private boolean verbose() {
        return Arrays.asList(args).contains("--verbose");
    }

    /** " (from -Dproperty=value)" when a bad value came from a property or the environment. */
    private String fromDefault(ArgSpec spec) {
        if (!(spec instanceof OptionSpec option)) {
            return "";
        }
        for (String a : args) {
            for (String name : option.names()) {
                if (a.equals(name) || a.startsWith(name + "=")) {
                    return "";
                }
            }
        }
        Defaults.Origin o = defaults.origin(option);
        return o == null ? "" : " (from " + o.description() + ")";
    }

    /** One line: the message of each distinct cause, outermost first; files named as the OS does. */
    static String describe(Throwable t) {
        StringBuilder sb = new StringBuilder();
        String last = null;
        for (Throwable c = t; c != null; c = c.getCause() == c ? null : c.getCause()) {
            String m = message(c);
            if (last != null && last.contains(m)) {
                continue;
            }
            sb.append(sb.length() == 0 ? "" : ": ").append(m);
            last = m;
        }
        return sb.toString();
    }

    private static String message(Throwable c) {
        if (c instanceof NoSuchFileException f) {
            return f.getFile() + ": no such file or directory";
        }
        if (c instanceof AccessDeniedException f) {
            return f.getFile() + ": permission denied";
        }
        if (c instanceof FileSystemException f) {
            return f.getFile() + ": " + (f.getReason() == null ? c.getClass().getSimpleName() : f.getReason());
        }
        if (c instanceof OutOfMemoryError) {
            return "out of Java heap (" + c.getMessage() + "); raise -Xmx in EFA_AH_JAVA_OPTS";
        }
        return c.getMessage() == null ? c.getClass().getSimpleName() : c.getMessage();
    }
}
