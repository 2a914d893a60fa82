package org.efaah.verbs;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;

import org.junit.jupiter.api.Test;

class VerbsExceptionTest {

    @Test
    void aNamedErrnoKeepsItsNumberAndName() {
        VerbsException e = new VerbsException("ibv_create_ah", Errno.ENOMEM, "max_ah reached");
        assertEquals(Errno.ENOMEM, e.errno());
        assertEquals(12, e.errnoValue());
        assertEquals("ibv_create_ah failed: ENOMEM (12): max_ah reached", e.getMessage());
    }

    @Test
    void unknownHasNoNumberAndIsRefusedRatherThanReadAsEperm() {
        // Errno.UNKNOWN's value is -1; taken as a number it became 1, EPERM.
        assertThrows(IllegalArgumentException.class, () -> new VerbsException("ibv_create_ah", Errno.UNKNOWN, null));
        VerbsException byNumber = new VerbsException("ibv_create_ah", 200, null);
        assertEquals(Errno.UNKNOWN, byNumber.errno());
        assertEquals(200, byNumber.errnoValue());
    }
}
