package jobgauge.hadoop;

import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.conf.Configured;
import org.apache.hadoop.fs.Path;
import org.apache.hadoop.io.Text;
import org.apache.hadoop.mapreduce.Job;
import org.apache.hadoop.mapreduce.Mapper;
import org.apache.hadoop.mapreduce.Reducer;
import org.apache.hadoop.mapreduce.lib.input.FileInputFormat;
import org.apache.hadoop.mapreduce.lib.input.KeyValueTextInputFormat;
import org.apache.hadoop.mapreduce.lib.output.FileOutputFormat;
import org.apache.hadoop.mapreduce.lib.output.TextOutputFormat;
import org.apache.hadoop.mapreduce.lib.partition.InputSampler;
import org.apache.hadoop.mapreduce.lib.partition.TotalOrderPartitioner;
import org.apache.hadoop.util.Tool;
import org.apache.hadoop.util.ToolRunner;

/**
 * HiBench's Hadoop sort: identity map and reduce over {@code key<TAB>value}
 * text lines, sorted by key.  With more than one reducer the keys are range
 * partitioned (InputSampler + TotalOrderPartitioner) so that the part files,
 * read in order, are globally sorted.
 *
 * Usage: Sort [-D k=v ...] INPUT OUTPUT REPORT_PREFIX
 */
public class Sort extends Configured implements Tool {

    @Override
    public int run(String[] args) throws Exception {
        if (args.length != 3) {
            System.err.println("usage: Sort [-D k=v ...] INPUT OUTPUT REPORT_PREFIX");
            return 2;
        }
        Configuration conf = getConf();
        JobReport.useLocalMode(conf);
        Job job = Job.getInstance(conf, "sort");
        job.setJarByClass(Sort.class);
        job.setInputFormatClass(KeyValueTextInputFormat.class);
        job.setOutputFormatClass(TextOutputFormat.class);
        job.setMapperClass(Mapper.class);
        job.setReducerClass(Reducer.class);
        job.setMapOutputKeyClass(Text.class);
        job.setMapOutputValueClass(Text.class);
        job.setOutputKeyClass(Text.class);
        job.setOutputValueClass(Text.class);
        FileInputFormat.addInputPath(job, new Path(args[0]));
        FileOutputFormat.setOutputPath(job, new Path(args[1]));
        JobReport.Preparation sample = null;
        if (job.getNumReduceTasks() > 1) {
            Path partitions = new Path(args[2] + ".partitions");
            TotalOrderPartitioner.setPartitionFile(job.getConfiguration(), partitions);
            job.setPartitionerClass(TotalOrderPartitioner.class);
            sample = () -> InputSampler.writePartitionFile(
                    job, new InputSampler.RandomSampler<Text, Text>(0.1, 10000, 10));
        }
        return JobReport.runAndReport(job, args[2], sample);
    }

    public static void main(String[] args) throws Exception {
        System.exit(ToolRunner.run(new Configuration(), new Sort(), args));
    }
}
