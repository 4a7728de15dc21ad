import Foundation
import Testing
import ReelControl

@Suite struct ControlDisableTests {
    /// A slider turned off once the source is known (a camera without exposure controls)
    /// refuses changes with the reason, shows `enabled: false` and the reason in its state,
    /// and takes changes again when turned back on.
    @Test func aDisabledSliderRefusesWithItsReason() {
        let set = ControlSet()
        let exposure = SystemSlider.exposureBias()
        #expect(throws: Never.self) { try set.addControl(exposure) }
        exposure.disable("/dev/video0 has no brightness or exposure control (VIDIOC_QUERYCTRL)")
        let refused = set.set("exposure", "1")
        #expect(!refused.ok && refused.error == "/dev/video0 has no brightness or exposure control (VIDIOC_QUERYCTRL)")
        #expect(exposure.state.enabled == false && exposure.state.disabledReason?.contains("VIDIOC_QUERYCTRL") == true)
        set.drain()
        #expect(exposure.value.value == 0)
        exposure.disable(nil)
        #expect(set.set("exposure", "1").ok)
        set.drain()
        #expect(exposure.value.value == 1 && exposure.state.enabled)
    }
}
