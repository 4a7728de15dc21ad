import Testing
import ReelStorage

@Suite struct WriteStatsTests {
    /// A recording's write mode is the one its clips were written with; `mixed` when they differ.
    @Test func mergedWriteModesSayWhatTheClipsUsed() {
        var same = WriteStats(writeMode: "direct")
        same.merge(WriteStats(writeMode: "direct"))
        #expect(same.writeMode == "direct")
        var differ = WriteStats(writeMode: "direct")
        differ.merge(WriteStats(writeMode: "buffered"))
        differ.merge(WriteStats(writeMode: "direct"))
        #expect(differ.writeMode == "mixed")
    }
}
