/// What the synthetic sensor shows (`SyntheticSource(scene:)`).
public enum SyntheticScene: String, Sendable, CaseIterable {
    /// A picture about as hard to encode as a camera's: a photographic-like texture (light
    /// and shade, coloured objects with sharp edges, fine surface detail) panning slowly (4
    /// pixels right and 2 down a frame), with temporal sensor noise that differs every frame
    /// (and is the same for a given frame index every time). ProRes 422 HQ of it at 1080p30
    /// writes about 265 Mbit/s (about 245 without the noise), within the 150–330 Mbit/s of a
    /// camera's; every sample is drawn every frame (about 0.7 ms at 1920², 4 ms at 4032² in a
    /// release build: `measureDrawingCost`). Inter-frame codecs find it easy: its motion is
    /// whole-pixel translation and its noise is below their dead zone (H.264 at Reel's
    /// defaults writes about 1.4 Mbit/s).
    case realistic
    /// The flat test pattern: a gradient, the ratios' crop outlines and a dark centre panel,
    /// drawn once per buffer, cheap to draw and to encode (ProRes 422 HQ about 43 Mbit/s).
    case pattern
    /// The realistic scene with people in it (`PeopleScene`): up to three head-and-shoulders
    /// portraits (two frontal faces, one in profile) that enter, walk, stand and leave on a
    /// 24-second timeline, drawn over the texture. The scene knows every face's box in every
    /// frame (`PeopleScene.faces(index:)`): the ground truth of face detection and framing.
    /// The sensor must be mounted upright (`landscape`).
    case people

    /// Whether the scene is drawn whole every frame (the realistic scene, with or without people).
    public var isRealistic: Bool { self != .pattern }
}
