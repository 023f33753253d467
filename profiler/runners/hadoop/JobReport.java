package jobgauge.hadoop;

import java.io.IOException;
import java.io.PrintWriter;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.Paths;
import java.util.ArrayList;
import java.util.List;

import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.fs.LocalFileSystem;
import org.apache.hadoop.mapreduce.Counter;
import org.apache.hadoop.mapreduce.CounterGroup;
import org.apache.hadoop.mapreduce.Counters;
import org.apache.hadoop.mapreduce.Job;
import org.apache.hadoop.mapreduce.JobStatus;

/**
 * Runs one configured job and writes what happened next to the output:
 * {@code <report>.counters.properties} (one counter group per line, the
 * {@code group={NAME=value, ...}} layout that dr-elephant's counter dumps use)
 * and {@code <report>.json} (job id, status, timings, task counts, failure).
 *
 * The Python runner reads both; a job failure is written down, not thrown.
 */
public final class JobReport {

    private static final long POLL_MS = 20L;

    private JobReport() {
    }

    /**
     * Forces Hadoop's local job runner on the local file system, without
     * {@code .crc} side files (so byte counters count data, as on HDFS), and
     * polls for completion often enough that the measured job time is not
     * rounded up to the default 5-second poll.
     */
    public static void useLocalMode(Configuration conf) {
        conf.set("mapreduce.framework.name", "local");
        conf.set("fs.defaultFS", "file:///");
        conf.set("fs.file.impl", UncheckedLocalFileSystem.class.getName());
        conf.setBoolean("fs.file.impl.disable.cache", false);
        conf.setInt("mapreduce.client.completion.pollinterval", (int) POLL_MS);
    }

    /** The local file system, writing and verifying no checksum files. */
    public static class UncheckedLocalFileSystem extends LocalFileSystem {
        @Override
        public void initialize(java.net.URI name, Configuration conf) throws IOException {
            super.initialize(name, conf);
            setWriteChecksum(false);
            setVerifyChecksum(false);
        }
    }

    /** Work done before submission that counts as part of the job (e.g. sampling). */
    public interface Preparation {
        void run() throws Exception;
    }

    /** Submits the job, waits, writes the report; returns the process exit code. */
    public static int runAndReport(Job job, String reportPrefix) throws IOException {
        return runAndReport(job, reportPrefix, null);
    }

    /**
     * Runs {@code preparation} (if any), then submits the job and waits.  The
     * measured job time runs from before the preparation to the job's end.
     */
    public static int runAndReport(Job job, String reportPrefix, Preparation preparation) throws IOException {
        long submitMs = System.currentTimeMillis();
        long startNs = System.nanoTime();
        boolean succeeded = false;
        String error = null;
        long preparationNs = 0L;
        long runStartMs = -1L;
        long mapsDoneMs = -1L;
        try {
            if (preparation != null) {
                preparation.run();
                preparationNs = System.nanoTime() - startNs;
            }
            runStartMs = System.currentTimeMillis();
            job.submit();
            // The local runner starts reduces only once every map is done, so the
            // moment map progress reaches 1 splits the job into its two phases.
            while (!job.isComplete()) {
                if (mapsDoneMs < 0 && job.mapProgress() >= 1.0f) {
                    mapsDoneMs = System.currentTimeMillis();
                }
                Thread.sleep(POLL_MS);
            }
            if (mapsDoneMs < 0 && job.mapProgress() >= 1.0f) {
                mapsDoneMs = System.currentTimeMillis();
            }
            succeeded = job.isSuccessful();
        } catch (Exception e) {
            error = e.toString();
        }
        long elapsedNs = System.nanoTime() - startNs;
        long finishMs = System.currentTimeMillis();

        String state = "FAILED";
        Counters counters = null;
        String jobId = null;
        String failureInfo = null;
        try {
            JobStatus status = job.getStatus();
            state = status.getState().toString();
            failureInfo = status.getFailureInfo();
            jobId = String.valueOf(job.getJobID());
            counters = job.getCounters();
        } catch (Exception e) {
            if (error == null) {
                error = e.toString();
            }
        }
        if (succeeded) {
            state = "SUCCEEDED";
        } else if ("SUCCEEDED".equals(state) || "RUNNING".equals(state) || "PREP".equals(state)) {
            state = "FAILED";
        }
        if (!succeeded && error == null && failureInfo != null && !failureInfo.isEmpty()
                && !"NA".equals(failureInfo)) {
            error = failureInfo;      // the local runner says "NA"; its log has the cause
        }

        Configuration conf = job.getConfiguration();
        if (counters != null && counters.countCounters() > 0) {
            writeCounters(counters, Paths.get(reportPrefix + ".counters.properties"));
        }
        StringBuilder json = new StringBuilder();
        json.append("{\n");
        field(json, "job_id", jobId);
        field(json, "job_name", job.getJobName());
        field(json, "status", state);
        field(json, "hadoop_version", org.apache.hadoop.util.VersionInfo.getVersion());
        json.append("  \"submit_ms\": ").append(submitMs).append(",\n");
        json.append("  \"finish_ms\": ").append(finishMs).append(",\n");
        json.append("  \"job_runtime_ms\": ").append(elapsedNs / 1_000_000L).append(",\n");
        json.append("  \"run_start_ms\": ").append(runStartMs).append(",\n");
        json.append("  \"maps_done_ms\": ").append(mapsDoneMs).append(",\n");
        json.append("  \"preparation_ms\": ").append(preparationNs / 1_000_000L).append(",\n");
        json.append("  \"map_tasks\": ").append(conf.getInt("mapreduce.job.maps", -1)).append(",\n");
        json.append("  \"reduce_tasks\": ").append(conf.getInt("mapreduce.job.reduces", -1)).append(",\n");
        json.append("  \"has_counters\": ").append(counters != null).append(",\n");
        field(json, "error", error);
        json.append("  \"settings\": {");
        String[] knobs = {
            "mapreduce.job.reduces", "mapreduce.task.io.sort.mb", "mapreduce.task.io.sort.factor",
            "mapreduce.map.output.compress", "mapreduce.local.map.tasks.maximum",
            "mapreduce.local.reduce.tasks.maximum", "jobgauge.wordcount.combiner",
            "mapreduce.input.fileinputformat.split.maxsize",
        };
        List<String> parts = new ArrayList<>();
        for (String knob : knobs) {
            String value = conf.get(knob);
            if (value != null) {
                parts.add(quote(knob) + ": " + quote(value));
            }
        }
        json.append(String.join(", ", parts)).append("}\n}\n");
        Files.write(Paths.get(reportPrefix + ".json"), json.toString().getBytes(StandardCharsets.UTF_8));
        return succeeded ? 0 : 1;
    }

    private static void writeCounters(Counters counters, Path path) throws IOException {
        try (PrintWriter out = new PrintWriter(Files.newBufferedWriter(path, StandardCharsets.UTF_8))) {
            for (CounterGroup group : counters) {
                List<String> items = new ArrayList<>();
                for (Counter counter : group) {
                    items.add(counter.getName() + "=" + counter.getValue());
                }
                out.println(group.getName() + "={" + String.join(", ", items) + "}");
            }
        }
    }

    private static void field(StringBuilder json, String name, String value) {
        json.append("  ").append(quote(name)).append(": ")
            .append(value == null ? "null" : quote(value)).append(",\n");
    }

    static String quote(String text) {
        StringBuilder out = new StringBuilder("\"");
        for (char c : text.toCharArray()) {
            switch (c) {
                case '"': out.append("\\\""); break;
                case '\\': out.append("\\\\"); break;
                case '\n': out.append("\\n"); break;
                case '\r': out.append("\\r"); break;
                case '\t': out.append("\\t"); break;
                default:
                    if (c < 0x20) {
                        out.append(String.format("\\u%04x", (int) c));
                    } else {
                        out.append(c);
                    }
            }
        }
        return out.append('"').toString();
    }
}
