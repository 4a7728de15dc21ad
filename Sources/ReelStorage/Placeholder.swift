public enum ReelStorage {}
