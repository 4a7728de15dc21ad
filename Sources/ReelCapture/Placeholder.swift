public enum ReelCapture {}
