public enum ReelCore {}
