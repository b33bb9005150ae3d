package dev.tether.ffi;

/** Exit code and combined output of a child JVM. */
final class ProcessResult {
    final int exitCode;
    final String output;

    ProcessResult(int exitCode, String output) {
        this.exitCode = exitCode;
        this.output = output;
    }
}
