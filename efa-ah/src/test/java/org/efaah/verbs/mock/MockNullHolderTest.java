package org.efaah.verbs.mock;

import org.efaah.verbs.NullHolderPolls;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/** A poll with a null holder loses no completion on the mock, as on the native provider (NativeDeviceTest). */
class MockNullHolderTest {
    @ParameterizedTest(name = "efa={0}")
    @ValueSource(booleans = {true, false})
    void aNullHolderLosesNoCompletion(boolean efa) {
        try (MockVerbsProvider mock = new MockVerbsProvider(MockConfig.builder().efa(efa).build())) {
            NullHolderPolls.sendAndReceive(mock, efa, 0, (sendCq, receiveCq) -> { });
        }
    }
}
