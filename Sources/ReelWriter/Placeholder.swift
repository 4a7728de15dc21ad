public enum ReelWriter {}
