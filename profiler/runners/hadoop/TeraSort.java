package jobgauge.hadoop;

import java.io.IOException;

import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.conf.Configured;
import org.apache.hadoop.fs.FSDataInputStream;
import org.apache.hadoop.fs.FSDataOutputStream;
import org.apache.hadoop.fs.FileSystem;
import org.apache.hadoop.fs.Path;
import org.apache.hadoop.io.BytesWritable;
import org.apache.hadoop.mapreduce.InputSplit;
import org.apache.hadoop.mapreduce.RecordReader;
import org.apache.hadoop.mapreduce.RecordWriter;
import org.apache.hadoop.mapreduce.TaskAttemptContext;
import org.apache.hadoop.mapreduce.lib.input.FileInputFormat;
import org.apache.hadoop.mapreduce.lib.input.FileSplit;
import org.apache.hadoop.mapreduce.lib.output.FileOutputFormat;
import org.apache.hadoop.util.Tool;
import org.apache.hadoop.util.ToolRunner;

/**
 * A TeraSort: total-order sort of teragen's 100-byte records (10-byte key,
 * 90-byte value) by the unsigned bytes of the key.  Keys are sampled before
 * submission (InputSampler) and range-partitioned (TotalOrderPartitioner), so
 * the part files, read in order, are globally sorted; the output is the
 * records themselves, 100 bytes each, no separators.
 *
 * Usage: TeraSort [-D k=v ...] INPUT OUTPUT REPORT_PREFIX
 */
public class TeraSort extends Configured implements Tool {

    static final int KEY_LENGTH = 10;
    static final int VALUE_LENGTH = 90;
    static final int RECORD_LENGTH = KEY_LENGTH + VALUE_LENGTH;

    /** Reads fixed 100-byte records; a split owns the records that start inside it. */
    public static class TeraInputFormat extends FileInputFormat<BytesWritable, BytesWritable> {
        @Override
        public RecordReader<BytesWritable, BytesWritable> createRecordReader(
                InputSplit split, TaskAttemptContext context) {
            return new TeraRecordReader();
        }
    }

    static class TeraRecordReader extends RecordReader<BytesWritable, BytesWritable> {
        private FSDataInputStream in;
        private long start;
        private long end;
        private long position;
        private final byte[] buffer = new byte[RECORD_LENGTH];
        private final BytesWritable key = new BytesWritable();
        private final BytesWritable value = new BytesWritable();

        @Override
        public void initialize(InputSplit genericSplit, TaskAttemptContext context) throws IOException {
            FileSplit split = (FileSplit) genericSplit;
            Path file = split.getPath();
            FileSystem fs = file.getFileSystem(context.getConfiguration());
            long fileLength = fs.getFileStatus(file).getLen();
            if (fileLength % RECORD_LENGTH != 0) {
                throw new IOException(file + " is " + fileLength + " bytes, not a whole number of "
                        + RECORD_LENGTH + "-byte records");
            }
            start = (split.getStart() + RECORD_LENGTH - 1) / RECORD_LENGTH * RECORD_LENGTH;
            end = Math.min(split.getStart() + split.getLength(), fileLength);
            in = fs.open(file);
            in.seek(start);
            position = start;
        }

        @Override
        public boolean nextKeyValue() throws IOException {
            if (position >= end) {
                return false;
            }
            in.readFully(buffer, 0, RECORD_LENGTH);
            position += RECORD_LENGTH;
            key.set(buffer, 0, KEY_LENGTH);
            value.set(buffer, KEY_LENGTH, VALUE_LENGTH);
            return true;
        }

        @Override
        public BytesWritable getCurrentKey() {
            return key;
        }

        @Override
        public BytesWritable getCurrentValue() {
            return value;
        }

        @Override
        public float getProgress() {
            return end == start ? 1.0f : Math.min(1.0f, (position - start) / (float) (end - start));
        }

        @Override
        public void close() throws IOException {
            if (in != null) {
                in.close();
            }
        }
    }

    /** Writes each record back as its 100 raw bytes. */
    public static class TeraOutputFormat extends FileOutputFormat<BytesWritable, BytesWritable> {
        @Override
        public RecordWriter<BytesWritable, BytesWritable> getRecordWriter(TaskAttemptContext context)
                throws IOException {
            Path file = getDefaultWorkFile(context, "");
            FSDataOutputStream out = file.getFileSystem(context.getConfiguration()).create(file, false);
            return new RecordWriter<BytesWritable, BytesWritable>() {
                @Override
                public void write(BytesWritable key, BytesWritable value) throws IOException {
                    out.write(key.getBytes(), 0, key.getLength());
                    out.write(value.getBytes(), 0, value.getLength());
                }

                @Override
                public void close(TaskAttemptContext ignored) throws IOException {
                    out.close();
                }
            };
        }
    }

    @Override
    public int run(String[] args) throws Exception {
        return Jobs.runSort(this, args, "terasort", TeraInputFormat.class, TeraOutputFormat.class,
                BytesWritable.class, BytesWritable.class);
    }

    public static void main(String[] args) throws Exception {
        System.exit(ToolRunner.run(new Configuration(), new TeraSort(), args));
    }
}
