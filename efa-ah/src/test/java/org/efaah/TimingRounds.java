package org.efaah;

import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.PrintWriter;
import java.io.StringWriter;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.platform.engine.discovery.DiscoverySelectors;
import org.junit.platform.launcher.Launcher;
import org.junit.platform.launcher.LauncherDiscoveryRequest;
import org.junit.platform.launcher.TagFilter;
import org.junit.platform.launcher.core.LauncherDiscoveryRequestBuilder;
import org.junit.platform.launcher.core.LauncherFactory;
import org.junit.platform.launcher.listeners.SummaryGeneratingListener;
import org.junit.platform.launcher.listeners.TestExecutionSummary;

/**
 * scripts/test's timing step: every test of this module tagged {@code timing}, outside the native group (its outcome
 * depends on how threads are scheduled, or a wait has a bound), run round after round in one
 * JVM, which scripts/test pins to one CPU beside busy JVMs. The rounds are the point: a test that
 * failed under the load of a parallel build did so in a JVM whose code was compiled hot by the
 * tests before it, running its threads at a speed a lone first run never reaches
 * (EfaSenderAtArrivalTest's churn case failed 2 of 12 rounds in one JVM on one CPU, 0 of 9 runs
 * in fresh JVMs beside busy processes).
 *
 * <p>Not a *Test: surefire runs it only when named ({@code -Dtest=TimingRounds}). Its system
 * properties: {@code efaah.timing.rounds} (most rounds, default 1) and
 * {@code efaah.timing.seconds} (no round starts after that many seconds, default 180). Fails
 * with every failure of every round, each with its round.
 */
class TimingRounds {
    @Test
    void timingTaggedTestsHoldRoundAfterRoundUnderLoad() {
        int rounds = Integer.getInteger("efaah.timing.rounds", 1);
        long end = System.nanoTime() + TimeUnit.SECONDS.toNanos(Long.getLong("efaah.timing.seconds", 180));
        LauncherDiscoveryRequest request = LauncherDiscoveryRequestBuilder.request()
                .selectors(DiscoverySelectors.selectPackage("org.efaah"))
                // What the module's suite runs: tests of the native group need a device (the EFA
                // double's step runs them), and none is here.
                .filters(TagFilter.includeTags("timing"), TagFilter.excludeTags("native"))
                .build();
        Launcher launcher = LauncherFactory.create();
        List<String> failures = new ArrayList<>();
        long tests = 0;
        int round = 0;
        while (round < rounds && (round == 0 || System.nanoTime() < end)) {
            round++;
            SummaryGeneratingListener listener = new SummaryGeneratingListener();
            launcher.execute(request, listener);
            TestExecutionSummary summary = listener.getSummary();
            tests += summary.getTestsFoundCount();
            System.out.printf("round %d: %d tests, %d failed%n", round, summary.getTestsFoundCount(),
                    summary.getTotalFailureCount());
            for (TestExecutionSummary.Failure f : summary.getFailures()) {
                StringWriter trace = new StringWriter();
                f.getException().printStackTrace(new PrintWriter(trace));
                System.out.println(trace);
                failures.add("round " + round + ": " + f.getTestIdentifier().getUniqueId() + ": " + f.getException());
            }
        }
        assertTrue(tests > 0, "no test tagged timing was found");
        System.out.printf("%d rounds, %d tests, %d failed%n", round, tests, failures.size());
        assertTrue(failures.isEmpty(), failures.size() + " of " + tests + " timing tests failed over " + round
                + " rounds under load:\n" + String.join("\n", failures));
    }
}
