// The CRI's ImageService on the Docker Engine (the dockershim's docker_image.go): image status, pulls (the sandbox
// image's with the node's credentials), listing, removal and the image filesystem.
import { silentLogger, type Logger } from "../../log.ts";
import type { KubeletError } from "../../api/types.ts";
import { withOfflineHint } from "../pull-failure.ts";
import { imageUser } from "../security-context.ts";
import {
  isRuntimeError,
  runtimeError,
  type ImageStatus,
  type ImageSummary,
  type PullOptions,
  type Runtime,
} from "../runtime.ts";
import { call, short, tolerating, type DockerError } from "./docker-calls.ts";
import { credentialsFor, defaultDockerConfigPaths } from "./docker-credentials.ts";
import type { DockerEngine, EngineInfo } from "./docker-engine.ts";
import { pullError } from "./docker-streams.ts";

/** The Engine calls the image service makes. */
export type ImageEngine = Pick<
  DockerEngine,
  "inspectImage" | "pull" | "listImages" | "listContainers" | "removeImage" | "diskUsage"
>;

/** Options of the Docker image service. */
export interface DockerImagesOptions {
  /** Deadline of one call, ms (a pull not watched for progress gets at least 2 minutes). */
  timeoutMs: number;
  /** The shim's sandbox image (--network_container_image), which ensureSandboxImage pulls when absent. */
  sandboxImage: string;
  log?: Logger;
}

/** The image calls of the Runtime port, plus the sandbox image's pull. */
export type DockerImages = Pick<
  Runtime,
  "imageStatus" | "pullImage" | "listImages" | "removeImage" | "imageFsInfo" | "reportsPullProgress"
> & {
  /**
   * The dockershim's ensureSandboxImageExists: the shim's sandbox image is the runtime's, as a CRI runtime's is,
   * so the shim pulls it itself, with the node's credentials, when absent.
   */
  ensureSandboxImage(): Promise<void>;
};

/** The image service over the Engine; `info` reads the Engine's /info (its DockerRootDir is the image filesystem). */
export function createDockerImages(
  options: DockerImagesOptions,
  deps: { engine: ImageEngine; info(): Promise<Pick<EngineInfo, "DockerRootDir">> },
): DockerImages {
  const { engine } = deps;
  const { timeoutMs, sandboxImage } = options;
  const log = options.log ?? silentLogger;
  const limits = { timeoutMs };

  async function imageStatus(ref: string): Promise<ImageStatus | undefined> {
    let image;
    try {
      image = await call(`inspect image ${ref}`, (signal) => engine.inspectImage(ref, signal), limits);
    } catch (error) {
      if (isRuntimeError(error, "NotFound")) return undefined;
      throw error;
    }
    return { id: image.Id, repoTags: image.RepoTags ?? [], sizeBytes: image.Size, ...imageUser(image.Config?.User) };
  }

  async function pullImage(ref: string, { auth, signal, onProgress }: PullOptions = {}): Promise<void> {
    const action = `pull image ${ref}`;
    let failure: string | undefined;
    try {
      const stream = await call(
        action,
        (abortSignal) => engine.pull(ref, auth, abortSignal),
        // Docker answers a pull with its first progress message, which a stalled registry may
        // never let it send: a caller that watches progress owns the deadline (no RuntimeUnavailable).
        { timeoutMs: onProgress ? Infinity : Math.max(timeoutMs, 120_000), signal, stream: true },
      );
      try {
        onProgress?.({ message: "pulling", status: "pulling", bytes: 0 });
        failure = await pullError(stream, onProgress);
      } finally {
        stream.destroy();
      }
    } catch (error) {
      // Cancelled: the caller's reason (e.g. the progress deadline's), not the stream's "aborted".
      if (signal?.aborted) throw signal.reason;
      if (isRuntimeError(error, "RuntimeUnavailable")) throw error;
      failure = (error as Error).message.replace(/^cannot pull image \S+: /, "");
    }
    if (signal?.aborted) throw signal.reason;
    if (failure) throw runtimeError("ImagePullFailed", `cannot ${action}: ${failure}`);
  }

  // The Engine runs one disk usage count at a time and answers a second one "a disk usage operation is
  // already running": callers at once (image GC, the node's stats) share the count in flight.
  let counting: Promise<{ LayersSize?: number }> | undefined;
  const diskUsage = () =>
    (counting ??= call("read the Docker Engine's disk usage", (signal) => engine.diskUsage(signal), limits).finally(
      () => (counting = undefined),
    ));

  return {
    imageStatus,
    reportsPullProgress: true,
    pullImage,
    async ensureSandboxImage() {
      if (await imageStatus(sandboxImage)) return;
      log.info(`pulling the sandbox image ${sandboxImage} (--network_container_image)`);
      await pullImage(sandboxImage, { auth: credentialsFor(sandboxImage, defaultDockerConfigPaths()) }).catch(
        (error: KubeletError) => {
          if (!isRuntimeError(error, "ImagePullFailed")) throw error;
          const why = error.message.replace(/^cannot pull image \S+: /, "");
          const message = `cannot pull the sandbox image ${sandboxImage} (--network_container_image): ${why}`;
          throw runtimeError("ImagePullFailed", withOfflineHint(message), { cause: error });
        },
      );
    },
    async imageFsInfo() {
      // The dockershim's answer: the data root is the image filesystem; the images' bytes are what
      // `docker system df` counts (shared layers once). The Engine keeps no inode count of its own.
      const [info, df] = await Promise.all([deps.info(), diskUsage()]);
      return { mountpoint: info.DockerRootDir, usedBytes: df.LayersSize ?? 0 };
    },
    async listImages(): Promise<ImageSummary[]> {
      const [images, containers] = await call(
        "list images",
        (signal) => Promise.all([engine.listImages(signal), engine.listContainers({ all: true }, signal)]),
        limits,
      );
      const used = new Set(containers.map((c) => c.ImageID));
      return images.map((i) => ({
        id: i.Id,
        tags: (i.RepoTags ?? []).filter((t) => t !== "<none>:<none>"),
        sizeBytes: i.Size,
        createdAt: i.Created * 1000,
        inUse: used.has(i.Id),
      }));
    },
    async removeImage(id) {
      const name = short(id.replace(/^sha256:/, ""));
      await call(
        `remove image ${name}`,
        async (signal) => {
          // Never forced (force also deletes images of stopped containers): an image tagged in several repositories is
          // removed tag by tag, the last untag deleting it; a container using it answers 409 (Conflict).
          let tags: string[];
          try {
            tags = (await engine.inspectImage(id, signal)).RepoTags ?? [];
          } catch (error) {
            if ((error as DockerError).statusCode === 404) return;
            throw error;
          }
          // Untagging one of several tags succeeds even under a container: check for users first.
          const imageId = id.startsWith("sha256:") ? id : `sha256:${id}`;
          const users = (await engine.listContainers({ all: true }, signal)).filter((c) => c.ImageID === imageId);
          if (users.length)
            throw runtimeError("Conflict", `cannot remove image ${name}: container ${short(users[0]!.Id)} uses it`);
          for (const ref of tags.length ? tags : [id]) await tolerating([404], () => engine.removeImage(ref, signal));
        },
        limits,
      );
    },
  };
}
