import Dispatch
import FoundationEssentials
import LinuxSupport
import Logging
import ScreenTimeCore
import ScreenTimeIPC
import ServiceLifecycle
import Synchronization

// The browsers' policies (safe search, private windows, extensions), kept in place.
extension DomainShield {
    /// Watches the browser policies' files while they are installed: one removed or changed by
    /// someone else is written again (a second agent's test removing them, a package's upgrade).
    /// The watch is made again after each change (a removed folder takes its watch with it); it
    /// sleeps while nothing changes.
    func watchBrowserPolicies() async {
        guard !configuration.browserPolicies.isEmpty, let stop = policyWatchStop else { return }
        // (Its paths do not change; what is written does, with safe search: `browserPolicies()`.)
        let policies = browserPolicies()
        await withCheckedContinuation { (done: CheckedContinuation<Void, Never>) in
            Threads.start("screentime.policies") { [self] in
                while !stop.isRaised {
                    guard state.withLock({ $0.policiesInstalled == true }) else {
                        // Not installed: until they are put in step again.
                        policiesPutInStep.wait()
                        continue
                    }
                    // Written again where they are not in place, their folders with them: a
                    // folder removed (with the files in it) leaves nothing to watch until then.
                    restoreBrowserPolicies(browserPolicies())
                    guard let watch = try? FileWatch(files: policies.paths) else {
                        // Removed again while being written, or not writable: tried again in a
                        // moment (or when they are put in step), never left unwatched.
                        _ = policiesPutInStep.wait(timeout: .now() + .seconds(2))
                        continue
                    }
                    // A change between the write and the watch.
                    restoreBrowserPolicies(browserPolicies())
                    try? watch.run(until: stop) { watch.stop() }
                }
                done.resume()
            }
        }
    }

    /// The browser policies as they are to be now (safe search as the state says).
    func browserPolicies() -> BrowserPolicies {
        let (restrict, settings) = state.withLock { ($0.policiesRestrict, $0.browserSettings) }
        return BrowserPolicies(
            root: configuration.browserPolicies, statePath: configuration.stateDirectory + "/browser-policies.json",
            youTubeRestrict: restrict, privateWindows: settings.privateWindows, extensionAllowlist: settings.extensions)
    }

    /// A guardian changed what the browsers may do: written at once where they are installed.
    func browserSettingsChanged(_ settings: BrowserSettings) {
        let (installed, restrict) = state.withLock { state in
            state.browserSettings = settings
            return (state.policiesInstalled == true, state.policiesRestrict)
        }
        rebuilding.withLock { _ in updateBrowserPolicies(wanted: installed, youTubeRestrict: restrict) }
    }

    /// Writes the policies again if they are installed and not in place.
    func restoreBrowserPolicies(_ policies: BrowserPolicies) {
        rebuilding.withLock { _ in
            guard state.withLock({ $0.policiesInstalled == true }), !policies.isInPlace else { return }
            do {
                try policies.install()
                logger.warning(
                    "the browser policies were removed or changed; written again",
                    metadata: ["firefox": "\(policies.firefoxPath)", "chromium": "\(policies.chromiumPath)"])
            } catch {
                logger.error("the browser policies could not be written again", metadata: ["error": "\(error)"])
            }
        }
    }
}
