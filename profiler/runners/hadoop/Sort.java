package jobgauge.hadoop;

import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.conf.Configured;
import org.apache.hadoop.io.Text;
import org.apache.hadoop.mapreduce.lib.input.KeyValueTextInputFormat;
import org.apache.hadoop.mapreduce.lib.output.TextOutputFormat;
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
        return Jobs.runSort(this, args, "sort", KeyValueTextInputFormat.class, TextOutputFormat.class,
                Text.class, Text.class);
    }

    public static void main(String[] args) throws Exception {
        System.exit(ToolRunner.run(new Configuration(), new Sort(), args));
    }
}
