import Foundation
import ReelCLI

// The command line lives in ReelCLI (parsing, the commands, printing), where tests reach it.
exit(ReelCLI.main(Array(CommandLine.arguments.dropFirst())))
