package org.efaah.cli;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.PrintWriter;
import java.io.StringWriter;
import java.util.Map;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/** Runs the command line in this JVM, as a user would from a shell, and keeps what it printed. */
record Cli(int exit, String out, String err) {

    static Cli run(String... args) {
        return run(Map.of(), args);
    }

    /**
     * Runs the command line on {@code mock} rather than on a mock of its own: a server on it is not
     * refused, as the test holding {@code mock} can reach it.
     */
    static Cli runOn(org.efaah.verbs.mock.MockVerbsProvider mock, String... args) {
        StringWriter out = new StringWriter();
        StringWriter err = new StringWriter();
        int exit = Main.run(new PrintWriter(out, true), new PrintWriter(err, true), Map.of(), mock, args);
        return new Cli(exit, out.toString(), err.toString());
    }

    static Cli run(Map<String, String> environment, String... args) {
        StringWriter out = new StringWriter();
        StringWriter err = new StringWriter();
        int exit = Main.run(new PrintWriter(out, true), new PrintWriter(err, true), environment, args);
        return new Cli(exit, out.toString(), err.toString());
    }

    /** Asserts the exit code; shows both streams when it differs. */
    Cli expect(int code) {
        assertEquals(code, exit, this::toString);
        return this;
    }

    /** The failure is one line on stderr naming every fragment, without a stack trace. */
    Cli oneLine(String... fragments) {
        String line = err.strip();
        assertFalse(line.contains("\n"), () -> "more than one line:\n" + this);
        assertFalse(line.contains("\tat ") || line.contains("Exception"), () -> "a stack trace or class name:\n" + this);
        for (String f : fragments) {
            assertTrue(line.contains(f), () -> "'" + f + "' missing:\n" + this);
        }
        return this;
    }

    long number(String label) {
        Matcher m = Pattern.compile(Pattern.quote(label) + "\\s*([\\d,]+)").matcher(out);
        assertTrue(m.find(), () -> label + " missing in:\n" + out);
        return Long.parseLong(m.group(1).replace(",", ""));
    }

    @Override
    public String toString() {
        return "exit " + exit + "\n--- stdout:\n" + out + "--- stderr:\n" + err;
    }
}
