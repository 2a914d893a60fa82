package org.efaah.verbs.ibverbs;

/** Messages of a cause chain, for assertions. */
final class NativeVerbsTestMessages {
    private NativeVerbsTestMessages() {
    }

    static String chain(Throwable t) {
        StringBuilder sb = new StringBuilder();
        for (Throwable c = t; c != null; c = c.getCause()) {
            sb.append(c).append(" <- ");
        }
        return sb.toString();
    }
}
