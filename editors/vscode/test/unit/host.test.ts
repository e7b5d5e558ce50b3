import { describe, expect, it } from "vitest";
import { noCopyText, parseCheckpointUri } from "../../src/host/checkpointDocuments";
import type { ResumeView } from "../../src/common/messages";
import { restoredText } from "../../src/host/navigation";
import { diffTitle, listedFile } from "../../src/host/resume";

const resume: ResumeView = {
  sessionId: "s",
  context: "",
  origin: "resumed",
  lastActive: null,
  summary: null,
  decisions: [],
  changedFiles: [{ path: "templates/a.md", change: "modified", checkpoint: 3 }],
};

describe("checkpoint copies", () => {
  it("reads the file and the checkpoint back from the document's URI", () => {
    expect(parseCheckpointUri({ path: "/templates/a.md", query: "checkpoint=3" })).toEqual({ path: "templates/a.md", checkpoint: 3 });
    expect(parseCheckpointUri({ path: "/a.md", query: "checkpoint=x" })).toBeUndefined();
    expect(parseCheckpointUri({ path: "/", query: "checkpoint=1" })).toBeUndefined();
  });

  it("says why there is no copy", () => {
    expect(noCopyText(".env", 2, "not kept: contains a secret")).toBe("(.env: checkpoint 2 has no text copy: not kept: contains a secret)\n");
  });

  it("titles the diff with the file and the checkpoint", () => {
    expect(diffTitle({ path: "templates/a.md", change: "modified", checkpoint: 3 })).toBe("a.md (checkpoint 3 ↔ now)");
  });
});

describe("the banner's links", () => {
  it("open only files the server listed as changed", () => {
    expect(listedFile(resume, "templates/a.md")?.checkpoint).toBe(3);
    expect(listedFile(resume, "../../etc/passwd")).toBeUndefined();
    expect(listedFile(undefined, "templates/a.md")).toBeUndefined();
  });
});

describe("a restore from the timeline", () => {
  it("says how many files went back and which created ones were kept", () => {
    const result = { sessionId: "s", number: 2, restoredFiles: ["a.md"], createdFiles: ["b.md"], skippedFiles: [], withheldFiles: {} };
    expect(restoredText(result)).toBe("restored checkpoint 2: 1 file(s); created since and kept: b.md");
    expect(restoredText({ ...result, createdFiles: [] })).toBe("restored checkpoint 2: 1 file(s)");
  });
});
