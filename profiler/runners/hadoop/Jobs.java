package jobgauge.hadoop;

import java.io.IOException;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;

import org.apache.hadoop.conf.Configured;
import org.apache.hadoop.fs.Path;
import org.apache.hadoop.io.RawComparator;
import org.apache.hadoop.mapreduce.InputFormat;
import org.apache.hadoop.mapreduce.Job;
import org.apache.hadoop.mapreduce.Mapper;
import org.apache.hadoop.mapreduce.OutputFormat;
import org.apache.hadoop.mapreduce.Reducer;
import org.apache.hadoop.mapreduce.lib.input.FileInputFormat;
import org.apache.hadoop.mapreduce.lib.output.FileOutputFormat;
import org.apache.hadoop.mapreduce.lib.partition.InputSampler;
import org.apache.hadoop.mapreduce.lib.partition.TotalOrderPartitioner;

/**
 * What every jobgauge MapReduce job shares: the {@code INPUT OUTPUT REPORT_PREFIX}
 * command line, Hadoop's local mode, and (for the sorts) an identity map and
 * reduce whose keys are range partitioned so that the part files, read in
 * order, are globally sorted.
 */
public final class Jobs {

    /** The exit code of a job given the wrong arguments. */
    public static final int USAGE_ERROR = 2;

    private Jobs() {
    }

    /**
     * A local-mode job named {@code name} that reads {@code args[0]} and writes
     * {@code args[1]}, or null (after printing the usage line) when {@code args}
     * are not {@code INPUT OUTPUT REPORT_PREFIX}.
     */
    public static Job localJob(Configured tool, String[] args, String name) throws IOException {
        if (args.length != 3) {
            System.err.println("usage: " + tool.getClass().getSimpleName()
                    + " [-D k=v ...] INPUT OUTPUT REPORT_PREFIX");
            return null;
        }
        JobReport.useLocalMode(tool.getConf());
        Job job = Job.getInstance(tool.getConf(), name);
        job.setJarByClass(tool.getClass());
        FileInputFormat.addInputPath(job, new Path(args[0]));
        FileOutputFormat.setOutputPath(job, new Path(args[1]));
        return job;
    }

    /**
     * Runs a total-order sort named {@code name} of the {@code keyClass}/{@code valueClass}
     * records that {@code inputFormat} reads and {@code outputFormat} writes, on the
     * command line {@code args} ({@code INPUT OUTPUT REPORT_PREFIX}): identity map and
     * reduce; with more than one reducer the keys are sampled before submission
     * (InputSampler, counted in the job time) and range partitioned
     * (TotalOrderPartitioner).  Returns the process exit code.
     */
    @SuppressWarnings("rawtypes")
    public static <K, V> int runSort(Configured tool, String[] args, String name,
            Class<? extends InputFormat> inputFormat, Class<? extends OutputFormat> outputFormat,
            Class<K> keyClass, Class<V> valueClass) throws IOException {
        Job job = localJob(tool, args, name);
        if (job == null) {
            return USAGE_ERROR;
        }
        String reportPrefix = args[2];
        job.setInputFormatClass(inputFormat);
        job.setOutputFormatClass(outputFormat);
        job.setMapperClass(Mapper.class);
        job.setReducerClass(Reducer.class);
        job.setMapOutputKeyClass(keyClass);
        job.setMapOutputValueClass(valueClass);
        job.setOutputKeyClass(keyClass);
        job.setOutputValueClass(valueClass);
        JobReport.Preparation sample = null;
        if (job.getNumReduceTasks() > 1) {
            Path partitions = new Path(reportPrefix + ".partitions");
            TotalOrderPartitioner.setPartitionFile(job.getConfiguration(), partitions);
            job.setPartitionerClass(TotalOrderPartitioner.class);
            sample = () -> InputSampler.writePartitionFile(job, new DistinctSampler<K, V>());
        }
        return JobReport.runAndReport(job, reportPrefix, sample);
    }

    /**
     * The keys the partition file is cut from: a random tenth of the records
     * (at most 10,000 from at most 10 splits), sorted and
     * without repeats.  When that random draw holds fewer distinct keys than
     * there are reducers (a small input can draw one key, or none) every
     * record up to 10,000 is read instead.  InputSampler.writePartitionFile
     * indexes past the end of a sample with fewer distinct keys than
     * reducers, so an input that still has too few fails here with a message
     * that says so.
     */
    static final class DistinctSampler<K, V> implements InputSampler.Sampler<K, V> {
        @Override
        public K[] getSample(InputFormat<K, V> inputFormat, Job job)
                throws IOException, InterruptedException {
            int reducers = job.getNumReduceTasks();
            @SuppressWarnings("unchecked")
            RawComparator<K> order = (RawComparator<K>) job.getSortComparator();
            K[] keys = distinct(new InputSampler.RandomSampler<K, V>(0.1, 10000, 10)
                    .getSample(inputFormat, job), order);
            if (keys.length < reducers) {
                keys = distinct(new InputSampler.SplitSampler<K, V>(10000, Integer.MAX_VALUE)
                        .getSample(inputFormat, job), order);
            }
            if (keys.length < reducers) {
                throw new IOException("the input has " + keys.length + " distinct keys, fewer than the "
                        + reducers + " reducers asked for (mapreduce.job.reduces); a range partition "
                        + "needs one distinct key per reducer");
            }
            return keys;
        }

        private static <K> K[] distinct(K[] sample, RawComparator<K> order) {
            Arrays.sort(sample, order);
            List<K> kept = new ArrayList<>();
            for (K key : sample) {
                if (kept.isEmpty() || order.compare(kept.get(kept.size() - 1), key) < 0) {
                    kept.add(key);
                }
            }
            return kept.toArray(Arrays.copyOf(sample, 0));
        }
    }
}
