package jobgauge.hadoop;

import java.io.IOException;
import java.util.StringTokenizer;

import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.conf.Configured;
import org.apache.hadoop.io.IntWritable;
import org.apache.hadoop.io.Text;
import org.apache.hadoop.mapreduce.Job;
import org.apache.hadoop.mapreduce.Mapper;
import org.apache.hadoop.mapreduce.Reducer;
import org.apache.hadoop.util.Tool;
import org.apache.hadoop.util.ToolRunner;

/**
 * HiBench's Hadoop wordcount: whitespace tokens, a summing reducer, and the
 * same reducer as combiner unless {@code -D jobgauge.wordcount.combiner=false}.
 *
 * Usage: WordCount [-D k=v ...] INPUT OUTPUT REPORT_PREFIX
 */
public class WordCount extends Configured implements Tool {

    public static class TokenMapper extends Mapper<Object, Text, Text, IntWritable> {
        private static final IntWritable ONE = new IntWritable(1);
        private final Text word = new Text();

        @Override
        protected void map(Object key, Text value, Context context) throws IOException, InterruptedException {
            StringTokenizer tokens = new StringTokenizer(value.toString());
            while (tokens.hasMoreTokens()) {
                word.set(tokens.nextToken());
                context.write(word, ONE);
            }
        }
    }

    public static class SumReducer extends Reducer<Text, IntWritable, Text, IntWritable> {
        private final IntWritable total = new IntWritable();

        @Override
        protected void reduce(Text key, Iterable<IntWritable> values, Context context)
                throws IOException, InterruptedException {
            int sum = 0;
            for (IntWritable value : values) {
                sum += value.get();
            }
            total.set(sum);
            context.write(key, total);
        }
    }

    @Override
    public int run(String[] args) throws Exception {
        Job job = Jobs.localJob(this, args, "wordcount");
        if (job == null) {
            return Jobs.USAGE_ERROR;
        }
        job.setMapperClass(TokenMapper.class);
        if (getConf().getBoolean("jobgauge.wordcount.combiner", true)) {
            job.setCombinerClass(SumReducer.class);
        }
        job.setReducerClass(SumReducer.class);
        job.setOutputKeyClass(Text.class);
        job.setOutputValueClass(IntWritable.class);
        return JobReport.runAndReport(job, args[2]);
    }

    public static void main(String[] args) throws Exception {
        System.exit(ToolRunner.run(new Configuration(), new WordCount(), args));
    }
}
