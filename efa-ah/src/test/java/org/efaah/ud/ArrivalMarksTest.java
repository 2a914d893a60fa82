package org.efaah.ud;

import static org.junit.jupiter.api.Assertions.assertEquals;

import org.junit.jupiter.api.Test;

/**
 * Issue 28 case 11: which mark of the cache's AHN reuses names each receive completion's sender.
 * A mark may name a completion only if it was read before that completion was written.
 */
class ArrivalMarksTest {

    @Test
    void aShortPollMakesItsMarkTheOneForEveryLaterPoll() {
        ArrivalMarks marks = new ArrivalMarks(1);
        marks.beforePoll(5, 100);
        marks.afterPoll(false); // full: completions may remain from before mark 5
        assertEquals(1, marks.take());
        marks.beforePoll(7, 99);
        marks.afterPoll(true); // short: the CQ was empty after this poll
        assertEquals(1, marks.take(), "polled by the short poll itself: may be older than mark 7");
        marks.beforePoll(9, 98);
        marks.afterPoll(true);
        assertEquals(7, marks.take());
    }

    @Test
    void onACqThatNeverEmptiesAMarkHoldsOnceTheReceivesPostedAtItCompleted() {
        ArrivalMarks marks = new ArrivalMarks(0);
        marks.beforePoll(3, 2); // two receives outstanding when mark 3 was read
        marks.afterPoll(false);
        assertEquals(0, marks.take());
        assertEquals(0, marks.take());
        assertEquals(3, marks.take(), "the third completion used a receive posted after mark 3: it arrived later");
        marks.beforePoll(8, 4);
        marks.afterPoll(false);
        for (int i = 0; i < 4; i++) {
            assertEquals(3, marks.take());
        }
        assertEquals(8, marks.take());
    }

    @Test
    void aPollThatThrowsSaysNothingAndADiscardedQpMakesTheLastMarkHold() {
        ArrivalMarks marks = new ArrivalMarks(2);
        marks.beforePoll(4, 50);
        marks.afterPoll(true);
        marks.beforePoll(6, 50); // promotes 4; this poll throws: no afterPoll
        marks.beforePoll(8, 50);
        marks.afterPoll(false);
        assertEquals(4, marks.take(), "mark 6 came before a poll that said nothing of the CQ");
        marks.qpDiscarded(); // the new QP is made after mark 8 was read
        assertEquals(8, marks.take());
    }
}
