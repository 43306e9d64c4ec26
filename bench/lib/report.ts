/**
 * What every benchmark report says about where it ran, and how it is written: helpers shared by the bench scripts.
 */
import * as Fs from "node:fs/promises"
import * as Os from "node:os"
import * as Path from "node:path"

/** The CPU model from /proc/cpuinfo (Linux), else what Node reports. */
export const cpuModel = async (): Promise<string> => {
  try {
    const info = await Fs.readFile("/proc/cpuinfo", "utf8")
    return /^model name\s*:\s*(.+)$/m.exec(info)?.[1]?.trim() ?? Os.cpus()[0]?.model ?? "unknown"
  } catch {
    return Os.cpus()[0]?.model ?? "unknown"
  }
}

/**
 * The two lines under a report's heading: Node version, CPU count (as `nproc` counts), CPU model and load average,
 * then the command and the date.
 */
export const machineLines = async (command: string, loadAverage: ReadonlyArray<number> = Os.loadavg()) => [
  `Machine: Node ${process.version}, ${Os.availableParallelism()} CPUs (nproc), ${await cpuModel()}, ` +
  `load average ${loadAverage.map((l) => l.toFixed(2)).join(" ")} when the run started.`,
  `Command: \`${command}\` (${new Date().toISOString().slice(0, 10)}).`
]

/** Writes a report through a temporary sibling (ignored by git) and a rename: never a half-written file. */
export const writeReport = async (path: string, text: string): Promise<void> => {
  await Fs.mkdir(Path.dirname(path), { recursive: true })
  await Fs.writeFile(`${path}.tmp`, text)
  await Fs.rename(`${path}.tmp`, path)
}
