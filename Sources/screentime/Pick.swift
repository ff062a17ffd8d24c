import ArgumentParser

struct Pick: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Pick apps, categories and domains; prints a FamilyActivitySelection.")
    func run() throws {}
}
